// The trainer on a CUDA device (skipped without one): the synthetic smoke config learns in fp32 as
// on the CPU, and in bf16 and fp16 mixed precision; an fp16 overflow is skipped and backs the loss
// scale off, a NaN loss follows train.nonfinite instead, and overflows at every scale stop the run;
// a deterministic fp16 run resumed from a checkpoint ends bit for bit where the
// uninterrupted run does; a ViT with MoH attention and a sin-cos table moved to the GPU computes
// what it computes on the CPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "autograd/autograd.h"
#include "core/backend_flags.h"
#include "core/random.h"
#include "models/vit/vit.h"
#include "tests/core/cuda/parity.h"
#include "tests/trainers/faulty_task.h"
#include "trainers/checkpoint.h"
#include "trainers/trainer.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

fs::path smoke_config() {
  return fs::path(MOH_FIXTURE_DIR) / ".." / ".." / ".." / "configs" / "synthetic" / "smoke.yaml";
}

class TrainerCuda : public test::TempDirTest {
 protected:
  // The smoke config on cuda in the test's folder; `overrides` apply last.
  Config smoke(const std::string& name, const std::vector<std::string>& overrides) const {
    std::vector<std::string> all{"device=cuda", "run.dir=" + path("runs"), "run.name=" + name};
    all.insert(all.end(), overrides.begin(), overrides.end());
    return Config::load(smoke_config().string(), training_schema("synthetic"), all);
  }
  fs::path run_dir(const std::string& name) const { return dir_ / "runs" / name; }

  std::vector<nlohmann::json> metrics(const std::string& name) const {
    std::vector<nlohmann::json> out;
    std::ifstream in(run_dir(name) / "metrics.jsonl");
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  std::vector<double> losses(const std::string& name) const {
    std::vector<double> out;
    for (const auto& r : metrics(name))
      if (r.contains("loss")) out.push_back(r["loss"].get<double>());
    return out;
  }
  std::string log_text(const std::string& name) const {
    std::ifstream in(run_dir(name) / "train.log");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  // Trains the smoke config and checks it learned: the loss falls and top-1 clears `min_top1`.
  TrainResult train_and_check(const std::string& name, const std::vector<std::string>& overrides, double min_top1) {
    const Config cfg = smoke(name, overrides);
    auto task = task_family("synthetic").create(cfg);
    for (const auto& [pname, p] : task->model().named_parameters()) EXPECT_TRUE(p.device().is_cuda()) << pname;
    TrainResult r = Trainer(cfg, *task).run();
    EXPECT_EQ(r.step, 300) << name;
    EXPECT_GT(r.eval.at("top1"), min_top1) << name;
    const auto l = losses(name);
    EXPECT_GE(l.size(), 2u) << name;
    if (l.size() >= 2) EXPECT_LT(l.back(), 0.5 * l.front()) << name;
    EXPECT_EQ(gemm_autocast(), DType::Float32) << name << ": the trainer restores the autocast";
    return r;
  }
};

TEST_F(TrainerCuda, SmokeConfigInFp32ReachesTheCpuAccuracyBand) {
  MOH_REQUIRE_GPU();
  const TrainResult r = train_and_check("fp32", {}, 0.85);
  // Checkpoints hold CPU tensors and load back into a CPU model.
  const CheckpointData d = load_checkpoint(r.checkpoint);
  for (const auto& [name, t] : d.model) EXPECT_TRUE(t.device().is_cpu()) << name;
  auto cpu_task = task_family("synthetic").create(smoke("cpu_eval", {"device=cpu"}));
  cpu_task->model().load_state_dict(d.model);
  EXPECT_NEAR(cpu_task->evaluate().at("top1"), r.eval.at("top1"), 0.01);
}

TEST_F(TrainerCuda, SmokeConfigTrainsInBf16) {
  MOH_REQUIRE_GPU();
  train_and_check("bf16", {"precision=bf16"}, 0.80);
}

TEST_F(TrainerCuda, SmokeConfigTrainsInFp16WithTheLossScaler) {
  MOH_REQUIRE_GPU();
  const TrainResult r = train_and_check("fp16", {"precision=fp16"}, 0.80);
  const auto m = metrics("fp16");
  ASSERT_FALSE(m.empty());
  EXPECT_TRUE(m.front().contains("loss_scale"));
  const CheckpointData d = load_checkpoint(r.checkpoint);
  ASSERT_TRUE(d.scheduler.count("loss_scale"));
  EXPECT_GT(d.scheduler.at("loss_scale"), 0);
}

using test::FaultyTask;
using Fault = FaultyTask::Fault;

TEST_F(TrainerCuda, Fp16OverflowSkipsTheUpdateAndHalvesTheScale) {
  MOH_REQUIRE_GPU();
  const Config cfg = smoke("overflow", {"precision=fp16", "train.steps=20", "train.log_every=1",
                                        "loss_scale.init=1024", "checkpoint.every=0", "eval.every=0"});
  FaultyTask task(task_family("synthetic").create(cfg), 8, Fault::Overflow);
  const TrainResult r = Trainer(cfg, task).run();
  EXPECT_EQ(r.step, 20);
  EXPECT_NE(log_text("overflow").find("step 7: loss scale overflow, scale -> 512"), std::string::npos)
      << log_text("overflow");
  // The skipped step (step 8 once counted) logs no training record; the scale is 512 from then on
  // (growth needs 2000 finite steps in a row).
  std::map<int64_t, double> scale_at;
  for (const auto& rec : metrics("overflow"))
    if (rec.contains("loss")) scale_at[rec["step"].get<int64_t>()] = rec["loss_scale"].get<double>();
  EXPECT_EQ(scale_at.size(), 19u);
  EXPECT_EQ(scale_at.count(8), 0u);
  EXPECT_EQ(scale_at[7], 1024.0);
  EXPECT_EQ(scale_at[20], 512.0);
  EXPECT_EQ(load_checkpoint(r.checkpoint).scheduler.at("loss_scale"), 512.0);
}

// A NaN loss is the model's at any scale: train.nonfinite decides and the scale stays, instead of
// an endless run of "overflows" that never aborts.
TEST_F(TrainerCuda, Fp16NonFiniteLossFollowsTrainNonfiniteAndKeepsTheScale) {
  MOH_REQUIRE_GPU();
  const std::vector<std::string> common{"precision=fp16", "train.steps=10", "schedule.warmup_steps=2", "train.log_every=1",
                                        "loss_scale.init=1024", "checkpoint.every=0", "eval.every=0"};
  std::vector<std::string> skip = common;
  skip.push_back("train.nonfinite=skip_step");
  const Config skip_cfg = smoke("nan_skip", skip);
  FaultyTask skipping(task_family("synthetic").create(skip_cfg), 4, Fault::NanLoss);
  const TrainResult r = Trainer(skip_cfg, skipping).run();
  EXPECT_EQ(r.step, 10);
  const std::string log = log_text("nan_skip");
  EXPECT_NE(log.find("step 3: the loss is nan; skipping the update"), std::string::npos) << log;
  EXPECT_EQ(log.find("loss scale overflow"), std::string::npos) << log;
  EXPECT_EQ(load_checkpoint(r.checkpoint).scheduler.at("loss_scale"), 1024.0);

  std::vector<std::string> abort = common;
  abort.push_back("train.nonfinite=abort");
  const Config abort_cfg = smoke("nan_abort", abort);
  FaultyTask aborting(task_family("synthetic").create(abort_cfg), 4, Fault::NanLoss);
  test::expect_error([&] { Trainer(abort_cfg, aborting).run(); }, {"step 3", "the loss is nan", "train.nonfinite: abort"});
}

// Overflows at every scale (the loss times 1e36 overflows float16 even at 2^-24): the run stops once
// the scale falls below 2^-24 instead of halving it towards 0.
TEST_F(TrainerCuda, Fp16OverflowsInARowStopTheRunWhenTheScaleIsSpent) {
  MOH_REQUIRE_GPU();
  const Config cfg = smoke("spent", {"precision=fp16", "train.steps=40", "loss_scale.init=1", "checkpoint.every=0",
                                     "eval.every=0"});
  std::vector<FaultyTask::At> every;
  for (int64_t m = 1; m <= 40; ++m) every.push_back({m, Fault::Overflow});
  FaultyTask task(task_family("synthetic").create(cfg), every);
  test::expect_error([&] { Trainer(cfg, task).run(); },
                     {"step 24", "the loss scale fell to", "not finite at any scale"});
}

TEST_F(TrainerCuda, DeterministicFp16ResumeReproducesTheUninterruptedRunBitForBit) {
  MOH_REQUIRE_GPU();
  // An overflow at step 2, then growth every 5 finite steps: the step-20 checkpoint holds a scale
  // and a count in the middle of an interval.
  const std::vector<std::string> common{"precision=fp16", "deterministic=true", "train.steps=40",
                                        "checkpoint.every=10", "checkpoint.keep_last=0", "eval.every=0",
                                        "loss_scale.init=1024", "loss_scale.growth_interval=5"};
  const Config full_cfg = smoke("full", common);
  FaultyTask full_task(task_family("synthetic").create(full_cfg), 3, Fault::Overflow);
  Trainer(full_cfg, full_task).run();

  const Config first_cfg = smoke("resumed", common);
  FaultyTask crashing(task_family("synthetic").create(first_cfg), {{3, Fault::Overflow}, {26, Fault::Crash}});
  EXPECT_THROW(Trainer(first_cfg, crashing).run(), std::runtime_error);
  std::vector<std::string> again = common;
  again.push_back("train.resume=auto");
  const Config resume_cfg = smoke("resumed", again);
  auto resumed_task = task_family("synthetic").create(resume_cfg);
  EXPECT_EQ(Trainer(resume_cfg, *resumed_task).run().step, 40);

  EXPECT_NE(log_text("full").find("step 2: loss scale overflow, scale -> 512"), std::string::npos);
  const CheckpointData mid = load_checkpoint((run_dir("full") / "checkpoints" / "step_00000020.h5").string());
  EXPECT_GT(mid.scheduler.at("loss_scale_good_steps"), 0);
  const StateDict a = full_task.model().state_dict(), b = resumed_task->model().state_dict();
  for (const auto& [name, t] : a) EXPECT_EQ(t.to_vector<float>(), b.at(name).to_vector<float>()) << name;
  const CheckpointData da = load_checkpoint((run_dir("full") / "checkpoints" / "step_00000040.h5").string());
  const CheckpointData db = load_checkpoint((run_dir("resumed") / "checkpoints" / "step_00000040.h5").string());
  EXPECT_EQ(da.scheduler.at("loss_scale"), db.scheduler.at("loss_scale"));
  EXPECT_EQ(da.scheduler.at("loss_scale_good_steps"), db.scheduler.at("loss_scale_good_steps"));
  for (const auto& [name, t] : da.optimizer)
    EXPECT_EQ(t.to_vector<double>(), db.optimizer.at(name).to_vector<double>()) << name;
}

TEST(TrainerCudaModel, VitWithMoHAndSinCosMovedToTheGpuMatchesTheCpu) {
  MOH_REQUIRE_GPU();
  VitOptions o;
  o.img_size = 8, o.patch_size = 4, o.in_chans = 3, o.num_classes = 5;
  o.dim = 32, o.depth = 2, o.heads = 4;
  o.pos_embed = VitOptions::PosEmbed::SinCos;
  o.attention.shared_heads = {1};
  o.attention.routed_topk = {2};
  Generator g1(5), g2(5);
  VisionTransformer on_cpu(o, g1), on_gpu(o, g2);
  on_gpu.to(Device::cuda(0));
  for (const auto& [name, p] : on_gpu.named_parameters()) EXPECT_TRUE(p.device().is_cuda()) << name;
  for (const auto& [name, b] : on_gpu.named_buffers()) EXPECT_TRUE(b.device().is_cuda()) << name;
  EXPECT_TRUE(on_gpu.head->weight().device().is_cuda()) << "a layer's own handle sees the moved parameter";
  Generator data(9);
  const Tensor images = uniform({3, 3, 8, 8}, -1.0, 1.0, data);
  const VitOutput want = on_cpu.forward(ag::Variable(images));
  const VitOutput got = on_gpu.forward(ag::Variable(test::gpu(images)));
  test::expect_close(test::cpu(got.logits.data()), want.logits.data(), 1e-4, 1e-5, "logits");
  ASSERT_EQ(got.balance_losses.size(), want.balance_losses.size());
  ag::backward(ag::sum(got.logits));
  EXPECT_TRUE(on_gpu.head->weight().grad().device().is_cuda());
}

}  // namespace
}  // namespace moh
