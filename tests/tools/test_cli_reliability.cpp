// `moh` under the failures a demanding user meets: run folders that would mix or leave run.dir
// (exit 2), cross-key config mistakes and sizes that overflow (exit 2, naming the keys), writes that
// fail as on a full disk (RLIMIT_FSIZE: an error, never a silent partial file), an eval.json that
// cannot be written (exit 1), and a console pipe closed early (training goes on to its checkpoint).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/test_util.h"
#include "tests/tools/cli_test_util.h"

namespace moh {
namespace {

namespace fs = std::filesystem;
using test::Cli;
using test::moh;
using test::Result;

void expect_in(const Result& r, const std::string& phrase) {
  EXPECT_NE(r.output.find(phrase), std::string::npos) << "missing '" << phrase << "' in:\n" << r.output;
}

TEST_F(Cli, RunNamesOutsideRunDirExitTwoAndWriteNothing) {
  for (const char* name : {"..", "."}) {
    const Result r = moh("train " + config() + " run.name=" + name);
    EXPECT_EQ(r.status, 2) << r.output;
    expect_in(r, "run.name");
  }
  EXPECT_FALSE(fs::exists(dir_ / "config.yaml"));
  EXPECT_FALSE(fs::exists(dir_ / "runs" / "config.yaml"));
  const Result empty_dir = moh("train " + config() + " run.dir=\\\"\\\"");  // run.dir="" after the shell
  EXPECT_EQ(empty_dir.status, 2) << empty_dir.output;
  expect_in(empty_dir, "run.dir");
}

TEST_F(Cli, ASecondFreshRunInTheSameFolderExitsTwoSayingHowToResumeOrOverwrite) {
  ASSERT_EQ(moh("train " + config()).status, 0);
  const Result again = moh("train " + config());
  EXPECT_EQ(again.status, 2) << again.output;
  expect_in(again, "already holds a run");
  expect_in(again, "train.resume=auto");
  expect_in(again, "run.overwrite=true");
  EXPECT_EQ(moh("train " + config() + " run.overwrite=true").status, 0);
}

TEST_F(Cli, CrossKeyMistakesAndOverflowingSizesExitTwoNamingTheKeys) {
  struct Case {
    std::string overrides;
    std::vector<std::string> phrases;
  };
  const std::vector<Case> cases = {
      {"schedule.warmup_steps=50", {"schedule.warmup_steps 50", "30 steps", "train.steps"}},
      {"schedule.min_lr=0.1", {"schedule.min_lr 0.1", "optim.lr 0.01"}},
      {"train.steps=null train.epochs=9223372036854775807", {"train.epochs 9223372036854775807", "overflows"}},
      {"train.batch_size=4611686018427387904", {"train.batch_size 4611686018427387904", "512 training samples"}},
  };
  for (const Case& c : cases) {
    const std::string& overrides = c.overrides;
    const Result r = moh("train " + config() + " " + overrides);
    EXPECT_EQ(r.status, 2) << overrides << "\n" << r.output;
    for (const std::string& p : c.phrases) expect_in(r, p);
  }
}

// Every file may grow to 8 KiB only, as if the disk filled up during the run: the metrics stream
// fails first (log_every=1), the run stops with an error and metrics.jsonl holds whole records only.
TEST_F(Cli, AMetricsWriteThatFailsStopsTheRunAndLeavesNoPartialRecord) {
  const Result r = test::shell("ulimit -f 8; " + test::moh_path() + " train " + config() +
                               " train.steps=400 train.log_every=1 checkpoint.every=0");
  EXPECT_EQ(r.status, 1) << r.output;
  expect_in(r, "metrics.jsonl");
  expect_in(r, "File too large");
  std::ifstream in(dir_ / "runs" / "cli" / "metrics.jsonl");
  int64_t lines = 0;
  for (std::string line; std::getline(in, line); ++lines)
    EXPECT_NO_THROW(nlohmann::json::parse(line)) << "torn record: " << line;
  EXPECT_GT(lines, 10);
}

// Files may grow to 1 KiB only (the smallest limit under which the sanitizers' runtime still starts);
// a 1.5 KB key value makes config.yaml the first write past it.
TEST_F(Cli, ARunThatCannotWriteItsConfigFailsBeforeTraining) {
  const Result r = test::shell("ulimit -f 1; " + test::moh_path() + " train " + config() +
                               " checkpoint.best_metric=" + std::string(1500, 'x'));
  EXPECT_EQ(r.status, 1) << r.output;
  expect_in(r, "config.yaml");
  EXPECT_FALSE(fs::exists(dir_ / "runs" / "cli" / "checkpoints" / "step_00000010.h5"));
}

TEST_F(Cli, EvalExitsOneWhenItCannotWriteEvalJson) {
  ASSERT_EQ(moh("train " + config()).status, 0);
  fs::create_directories(dir_ / "runs" / "cli" / "checkpoints" / "eval.json");  // a folder: cannot be replaced
  const Result r = moh("eval " + (dir_ / "runs" / "cli").string());
  EXPECT_EQ(r.status, 1) << r.output;
  expect_in(r, "eval.json");
}

TEST_F(Cli, AClosedConsolePipeDoesNotStopTraining) {
  const Result r = test::shell(test::moh_path() + " train " + config() +
                               " train.steps=60 train.log_every=1 2>&1 | head -n 1 >/dev/null; "
                               "echo \"moh exit ${PIPESTATUS[0]}\"");
  expect_in(r, "moh exit 0");
  EXPECT_TRUE(fs::exists(dir_ / "runs" / "cli" / "checkpoints" / "step_00000060.h5")) << r.output;
}

}  // namespace
}  // namespace moh
