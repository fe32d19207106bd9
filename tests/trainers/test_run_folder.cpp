// A run folder belongs to one run: run names that leave run.dir are refused, a fresh start in a folder
// holding another run is an error unless it resumes or overwrites it, a second process on a folder is
// refused naming the first (a killed holder does not block), nothing is written before the inputs are
// validated, a locked checkpoint is not mistaken for a corrupt one, and train.log records why a run
// stopped and every warning of the data pipeline.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "core/io/file_lock.h"
#include "tests/test_util.h"
#include "tests/trainers/faulty_task.h"
#include "tests/trainers/synthetic_run.h"
#include "trainers/checkpoint.h"
#include "trainers/run_folder.h"
#include "trainers/stop_signals.h"
#include "trainers/trainer.h"

namespace moh {
namespace {

namespace fs = std::filesystem;
using test::synthetic_config;

class RunFolderTest : public test::TempDirTest {
 protected:
  fs::path run_dir() const { return dir_ / "runs" / "smoke"; }
  TrainResult train(const std::vector<std::string>& overrides) {
    Config cfg = synthetic_config(dir_, overrides);
    auto task = test::make_synthetic_task(cfg);
    return Trainer(cfg, *task).run();
  }
};

TEST_F(RunFolderTest, RunNamesThatLeaveRunDirAndAnEmptyRunDirAreConfigErrors) {
  for (const char* name : {"..", ".", "..."})
    test::expect_error<ConfigError>([&] { synthetic_config(dir_, {std::string("run.name=") + name}); },
                                    {"run.name", "not only dots"});
  test::expect_error<ConfigError>([&] { synthetic_config(dir_, {"run.dir=''"}); }, {"run.dir", "non-empty"});
  EXPECT_NO_THROW(synthetic_config(dir_, {"run.name=v1.2"}));
}

TEST_F(RunFolderTest, AFreshStartInAFolderHoldingARunIsRefusedUnlessItResumesOrOverwrites) {
  train({"train.steps=20"});
  const std::string old_config = test::read_text(run_dir() / "config.yaml");
  test::expect_error<RunFolderError>([&] { train({"train.steps=20", "optim.lr=0.02"}); },
                                     {run_dir().string(), "already holds a run", "step_00000020.h5",
                                      "train.resume=auto", "run.overwrite=true"});
  EXPECT_EQ(test::read_text(run_dir() / "config.yaml"), old_config) << "the refused start wrote config.yaml";
  EXPECT_EQ(test::train_losses(run_dir()).size(), 20u) << "the refused start wrote metrics";
  // A resume is the same run: allowed (here it extends the run to 30 steps).
  EXPECT_EQ(train({"train.steps=30", "train.resume=auto"}).step, 30);
  // Overwriting deletes the old run first: its checkpoints, metrics and config are gone.
  EXPECT_EQ(train({"train.steps=10", "optim.lr=0.02", "run.overwrite=true"}).step, 10);
  EXPECT_EQ(CheckpointManager((run_dir() / "checkpoints").string(), 0).list(),
            std::vector<std::string>{(run_dir() / "checkpoints" / "step_00000010.h5").string()});
  EXPECT_EQ(test::train_losses(run_dir()).size(), 10u);
  EXPECT_NE(test::read_text(run_dir() / "config.yaml").find("lr: 0.02"), std::string::npos);
  test::expect_error<ConfigError>([&] { train({"run.overwrite=true", "train.resume=auto"}); },
                                  {"run.overwrite", "train.resume"});
}

TEST_F(RunFolderTest, ACheckpointOfAnotherRunStartsAFreshFolderOnly) {
  train({"train.steps=10"});
  const std::string ckpt = (run_dir() / "checkpoints" / "step_00000010.h5").string();
  EXPECT_EQ(train({"train.steps=20", "run.name=finetune", "train.resume=" + ckpt}).step, 20);
  // Into a folder that holds a run of its own, the same start would mix two runs.
  test::expect_error<RunFolderError>(
      [&] { train({"train.steps=30", "run.name=finetune", "train.resume=" + ckpt}); }, {"already holds a run"});
}

TEST_F(RunFolderTest, ASecondProcessOnTheFolderIsRefusedNamingTheHolder) {
  fs::create_directories(run_dir());
  const std::string lock = (run_dir() / ".lock").string();
  {
    std::optional<FileLock> held = FileLock::try_lock(lock, FileLock::Kind::Exclusive, true);
    ASSERT_TRUE(held.has_value());
    test::expect_error<RunFolderError>([&] { train({"train.steps=5"}); },
                                       {"in use by another process", "PID " + std::to_string(getpid())});
    EXPECT_FALSE(fs::exists(run_dir() / "config.yaml"));
  }
  // A holder killed with its lock held: the kernel released it, the lock file left behind does not block.
  const pid_t child = fork();
  if (child == 0) {
    auto held = FileLock::try_lock(lock, FileLock::Kind::Exclusive, true);
    pause();
    _exit(0);
  }
  for (int i = 0; i < 200 && lock_holder_pid(lock) != child; ++i) usleep(10000);
  ASSERT_EQ(lock_holder_pid(lock), child);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(train({"train.steps=5"}).step, 5);
}

TEST_F(RunFolderTest, ABadResumePathLeavesTheRunsConfigAlone) {
  train({"train.steps=10"});
  const std::string old_config = test::read_text(run_dir() / "config.yaml");
  const std::string missing = (run_dir() / "checkpoints" / "step_00000099.h5").string();
  test::expect_error([&] { train({"train.steps=20", "optim.lr=0.5", "train.resume=" + missing}); },
                     {"train.resume", "step_00000099.h5", "does not exist"});
  EXPECT_EQ(test::read_text(run_dir() / "config.yaml"), old_config);
  // The failure is in train.log.
  EXPECT_NE(test::read_text(run_dir() / "train.log").find("step_00000099.h5' does not exist"), std::string::npos);
}

TEST_F(RunFolderTest, AResumePastTheRunsEndIsRefusedAndAFinishedRunReportsItsCheckpoint) {
  train({"train.steps=20"});
  const std::string old_config = test::read_text(run_dir() / "config.yaml");
  test::expect_error<ConfigError>([&] { train({"train.steps=10", "train.resume=auto"}); },
                                  {"train.steps gives 10 steps", "is at step 20"});
  EXPECT_EQ(test::read_text(run_dir() / "config.yaml"), old_config);
  const TrainResult again = train({"train.steps=20", "train.resume=auto"});  // nothing left to do
  EXPECT_EQ(again.step, 20);
  EXPECT_EQ(again.checkpoint, (run_dir() / "checkpoints" / "step_00000020.h5").string());
}

// `moh train` installs the stop handlers before the task loads its data; a stop asked for then is kept
// by the trainer's own (nested) handlers and honoured after the first step.
TEST_F(RunFolderTest, AStopRequestedBeforeTheRunStartsIsHonouredAfterItsFirstStep) {
  StopSignals outer;
  Config cfg = synthetic_config(dir_, {"train.steps=20"});
  auto task = test::make_synthetic_task(cfg);
  Trainer::request_stop();
  const TrainResult r = Trainer(cfg, *task).run();
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.step, 1);
  EXPECT_EQ(load_checkpoint(r.checkpoint).step, 1);
}

TEST_F(RunFolderTest, ALockedCheckpointIsAnErrorNotASilentFallbackToAnOlderOne) {
  train({"train.steps=20"});
  const std::string newest = (run_dir() / "checkpoints" / "step_00000020.h5").string();
  std::optional<FileLock> writer = FileLock::try_lock(newest, FileLock::Kind::Exclusive, false);
  ASSERT_TRUE(writer.has_value());
  test::expect_error<CheckpointUnavailable>([&] { load_checkpoint(newest); },
                                            {"is locked by another process", "PID " + std::to_string(getpid())});
  CheckpointManager manager((run_dir() / "checkpoints").string(), 0);
  manager.set_busy_wait_s(0.3);
  test::expect_error<CheckpointUnavailable>([&] { manager.latest_valid(); }, {"step_00000020.h5", "locked"});
  EXPECT_TRUE(manager.take_warnings().empty()) << "a locked checkpoint was reported as corrupt";
  writer.reset();
  EXPECT_EQ(manager.latest_valid(), newest);
}

TEST_F(RunFolderTest, TrainLogRecordsTheDataPipelinesWarningsAndTheErrorThatEndedTheRun) {
  Config cfg = synthetic_config(dir_, {"train.steps=10"});
  test::FaultyTask task(test::make_synthetic_task(cfg),
                        {{3, test::FaultyTask::Fault::Warn}, {5, test::FaultyTask::Fault::NanLoss}});
  EXPECT_THROW(Trainer(cfg, task).run(), Error);
  const std::string log = test::read_text(run_dir() / "train.log");
  EXPECT_NE(log.find("warning faulty: warning at micro-batch 3"), std::string::npos) << log;
  EXPECT_NE(log.find("error step 4: the loss is nan"), std::string::npos) << log;
}

}  // namespace
}  // namespace moh
