// The training engine end to end on the synthetic task: it learns, writes the run folder and
// metrics, resumes bit for bit after a crash, stops cleanly on request, applies the non-finite
// policy (skip_step giving up after train.max_skipped_steps in a row), compares a resumed config
// with the checkpoint's, and gradient accumulation matches one large batch.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "autograd/autograd.h"
#include "core/factory.h"
#include "tests/test_util.h"
#include "tests/trainers/faulty_task.h"
#include "tests/trainers/synthetic_run.h"
#include "trainers/checkpoint.h"
#include "trainers/trainer.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

using test::read_metrics;
using test::synthetic_config;
using test::train_losses;
using test::FaultyTask;

std::unique_ptr<Task> make_task(const Config& cfg) { return test::make_synthetic_task(cfg); }

// Each run gets its own sub-folder of the test's temporary folder.
class TrainerRun : public test::TempDirTest {
 protected:
  fs::path folder(const std::string& name) const {
    fs::create_directories(dir_ / name);
    return dir_ / name;
  }
};

TEST_F(TrainerRun, LearnsTheSyntheticTaskAndWritesTheRunFolder) {
  const fs::path tmp = folder("run");
  Config cfg = synthetic_config(tmp, {"train.steps=150", "data.train_size=2048", "checkpoint.every=0"});
  auto task = make_task(cfg);
  const double before = task->evaluate().at("top1");
  TrainResult result = Trainer(cfg, *task).run();
  EXPECT_EQ(result.step, 150);
  EXPECT_FALSE(result.interrupted);
  EXPECT_GT(result.eval.at("top1"), 0.85) << "accuracy before training " << before;
  EXPECT_LT(result.eval.at("loss"), 0.5);
  const fs::path run = tmp / "runs" / "smoke";
  EXPECT_TRUE(fs::exists(run / "config.yaml"));
  EXPECT_TRUE(fs::exists(run / "train.log"));
  auto metrics = read_metrics(run);
  ASSERT_EQ(metrics.size(), 151u);  // 150 step records + the final evaluation
  for (const char* key : {"step", "epoch", "loss", "lb_loss", "lr", "grad_norm", "samples_per_s", "step_ms",
                          "mem_peak_mb"})
    EXPECT_TRUE(metrics[0].contains(key)) << key;
  EXPECT_TRUE(metrics.back().contains("eval/top1"));
  EXPECT_NEAR(metrics[0]["lr"].get<double>(), 0.01 / 5, 1e-12);  // first warmup step
  EXPECT_EQ(load_checkpoint(result.checkpoint).step, 150);
}

TEST_F(TrainerRun, ResumeAfterACrashReproducesTheUninterruptedRunBitForBit) {
  const fs::path a = folder("a"), b = folder("b");
  Config cfg_a = synthetic_config(a, {});
  auto task_a = make_task(cfg_a);
  TrainResult full = Trainer(cfg_a, *task_a).run();

  // Crash on the first micro-batch of step 26: the step-20 checkpoint is the latest.
  Config cfg_b1 = synthetic_config(b, {});
  auto crashing = std::make_unique<FaultyTask>(make_task(cfg_b1), 26, FaultyTask::Fault::Crash);
  EXPECT_THROW(Trainer(cfg_b1, *crashing).run(), std::runtime_error);
  Config cfg_resume = synthetic_config(b, {"train.resume=auto"});
  auto task_b = make_task(cfg_resume);
  TrainResult resumed = Trainer(cfg_resume, *task_b).run();
  EXPECT_EQ(resumed.step, 40);

  const auto la = train_losses(a / "runs" / "smoke"), lb = train_losses(b / "runs" / "smoke");
  ASSERT_EQ(la.size(), 40u);
  ASSERT_EQ(lb.size(), 25u + 20u);  // 25 steps before the crash, 20 after resuming at step 20
  for (size_t i = 0; i < 20; ++i) EXPECT_EQ(lb[25 + i], la[20 + i]) << "step " << 21 + i;
  StateDict wa = task_a->model().state_dict(), wb = task_b->model().state_dict();
  for (auto& [name, t] : wa) EXPECT_EQ(t.to_vector<float>(), wb.at(name).to_vector<float>()) << name;
}

TEST_F(TrainerRun, StopRequestSavesACheckpointAndResumeFinishesTheRun) {
  const fs::path tmp = folder("run");
  Config cfg = synthetic_config(tmp, {});
  FaultyTask task(make_task(cfg), 13, FaultyTask::Fault::Stop);
  TrainResult stopped = Trainer(cfg, task).run();
  EXPECT_TRUE(stopped.interrupted);
  EXPECT_EQ(stopped.step, 13);
  EXPECT_EQ(load_checkpoint(stopped.checkpoint).step, 13);
  Config again = synthetic_config(tmp, {"train.resume=auto"});
  auto task2 = make_task(again);
  EXPECT_EQ(Trainer(again, *task2).run().step, 40);
}

TEST_F(TrainerRun, NonFiniteLossIsSkippedOrAbortsWithTheLastGoodState) {
  {
    const fs::path tmp = folder("skip");
    Config cfg = synthetic_config(tmp, {"train.nonfinite=skip_step", "train.steps=10"});
    FaultyTask task(make_task(cfg), 4, FaultyTask::Fault::NanLoss);
    TrainResult r = Trainer(cfg, task).run();
    EXPECT_EQ(r.step, 10);
    EXPECT_EQ(train_losses(tmp / "runs" / "smoke").size(), 9u);  // the skipped step logs nothing
  }
  {
    const fs::path tmp = folder("abort");
    Config cfg = synthetic_config(tmp, {"train.nonfinite=abort", "train.steps=10"});
    FaultyTask task(make_task(cfg), 4, FaultyTask::Fault::NanLoss);
    try {
      Trainer(cfg, task).run();
      FAIL() << "expected an abort";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("step 3"), std::string::npos) << e.what();
    }
    CheckpointManager manager((tmp / "runs" / "smoke" / "checkpoints").string(), 0);
    ASSERT_TRUE(manager.latest_valid().has_value());
    EXPECT_EQ(load_checkpoint(*manager.latest_valid()).step, 3);
  }
}

// skip_step gives up after train.max_skipped_steps skipped updates in a row (a diverged run), with
// the last good state saved; a good step in between starts the count anew.
TEST_F(TrainerRun, SkipStepStopsAfterTooManySkippedUpdatesInARow) {
  const fs::path tmp = folder("diverged");
  Config cfg = synthetic_config(tmp, {"train.nonfinite=skip_step", "train.max_skipped_steps=3", "train.steps=20"});
  using F = FaultyTask::Fault;
  // Micro-batch n is step n - 1: steps 4 and 6, 7 are skipped alone or in pairs, then 9, 10, 11 in a row.
  FaultyTask task(make_task(cfg),
                  {{5, F::NanLoss}, {7, F::NanLoss}, {8, F::NanLoss}, {10, F::NanLoss}, {11, F::NanLoss}, {12, F::NanLoss}});
  try {
    Trainer(cfg, task).run();
    FAIL() << "expected the run to stop";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("step 11: 3 updates in a row were skipped (train.max_skipped_steps = 3)"), std::string::npos)
        << what;
    EXPECT_NE(what.find("the last because the loss is"), std::string::npos) << what;
  }
  CheckpointManager manager((tmp / "runs" / "smoke" / "checkpoints").string(), 0);
  ASSERT_TRUE(manager.latest_valid().has_value());
  EXPECT_EQ(load_checkpoint(*manager.latest_valid()).step, 11);
  EXPECT_EQ(train_losses(tmp / "runs" / "smoke").size(), 6u);  // steps 0..11, six of them skipped
}

// A resume compares the config with the checkpoint's: every change is a warning in train.log, a
// change of the model is refused naming the key (a ConfigError: exit 2 from the CLI).
TEST_F(TrainerRun, ResumeReportsConfigChangesAndRefusesAnotherModel) {
  const fs::path tmp = folder("run");
  const fs::path run_dir = tmp / "runs" / "smoke";
  Config first = synthetic_config(tmp, {"train.steps=10"});
  auto t1 = make_task(first);
  Trainer(first, *t1).run();

  Config longer = synthetic_config(tmp, {"train.resume=auto", "train.steps=20", "optim.lr=0.02"});
  auto t2 = make_task(longer);
  EXPECT_EQ(Trainer(longer, *t2).run().step, 20);
  std::ifstream in(run_dir / "train.log");
  const std::string log((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(log.find("resume: optim.lr differs from the checkpoint's config: 0.01 -> 0.02"), std::string::npos) << log;
  EXPECT_NE(log.find("resume: train.steps differs from the checkpoint's config: 10 -> 20"), std::string::npos) << log;
  EXPECT_EQ(log.find("resume: train.resume"), std::string::npos) << log;

  Config wider = synthetic_config(tmp, {"train.resume=auto", "train.steps=30", "optim.lr=0.02", "model.hidden=32"});
  auto t3 = make_task(wider);
  try {
    Trainer(wider, *t3).run();
    FAIL() << "expected the resume to be refused";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("model.hidden 64 -> 32"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("step_00000020.h5"), std::string::npos) << e.what();
  }
}

TEST_F(TrainerRun, GradientAccumulationMatchesOneLargeBatch) {
  const fs::path a = folder("a"), b = folder("b");
  Config one = synthetic_config(a, {"train.steps=8"});
  Config four = synthetic_config(b, {"train.steps=8", "train.grad_accum=4"});
  auto ta = make_task(one), tb = make_task(four);
  Trainer(one, *ta).run();
  Trainer(four, *tb).run();
  const auto la = train_losses(a / "runs" / "smoke"), lb = train_losses(b / "runs" / "smoke");
  ASSERT_EQ(la.size(), lb.size());
  for (size_t i = 0; i < la.size(); ++i) EXPECT_NEAR(la[i], lb[i], 1e-5 * (1 + std::fabs(la[i]))) << i;
}

TEST_F(TrainerRun, RejectsConfigsItCannotRun) {
  const fs::path tmp = folder("run");
  Config bad_accum = synthetic_config(tmp, {"train.grad_accum=3"});
  auto task = make_task(bad_accum);
  EXPECT_THROW(Trainer(bad_accum, *task), ConfigError);
  if (cuda_device_count() == 0) {  // tests/trainers/test_precision.cpp covers device errors in detail
    Config gpu = synthetic_config(tmp, {"device=cuda"});
    EXPECT_THROW(Trainer(gpu, *task), ConfigError);
  }
  Config bf16 = synthetic_config(tmp, {"precision=bf16"});  // on the CPU
  EXPECT_THROW(Trainer(bf16, *task), ConfigError);
  EXPECT_THROW(training_schema("vit_nonexistent"), ConfigError);
}

}  // namespace
}  // namespace moh
