// The `moh` executable's contract: commands, help, exit codes (0 ok, 2 usage/config, 1 runtime),
// train -> eval on the synthetic task with the JSON last lines, and readable config errors; Ctrl-C
// checkpoints and exits 0, a second Ctrl-C exits 130 at once.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/test_util.h"
#include "tests/tools/cli_test_util.h"

namespace moh {
namespace {

namespace fs = std::filesystem;
using test::Cli;
using test::moh;
using test::Result;

TEST_F(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(moh("").status, 2);
  Result unknown = moh("frobnicate");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.output.find("unknown command 'frobnicate'"), std::string::npos) << unknown.output;
  EXPECT_EQ(moh("train").status, 2);
  EXPECT_EQ(moh("--help").status, 0);
  Result help = moh("train --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.output.find("synthetic"), std::string::npos) << help.output;
}

TEST_F(Cli, ConfigPrintsTheResolvedConfigAndNamesBadKeys) {
  Result ok = moh("config " + config() + " optim.lr=3e-4");
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("task: synthetic"), std::string::npos) << ok.output;
  EXPECT_NE(ok.output.find("lr: 3.0e-04"), std::string::npos) << ok.output;
  EXPECT_NE(ok.output.find("hidden: 64"), std::string::npos) << ok.output;  // the family's default
  Result typo = moh("config " + config() + " optim.lrr=1");
  EXPECT_EQ(typo.status, 2);
  EXPECT_NE(typo.output.find("did you mean 'optim.lr'"), std::string::npos) << typo.output;
  Result missing = moh("config " + (dir_ / "nope.yaml").string());
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.output.find("does not exist"), std::string::npos) << missing.output;
  std::ofstream(dir_ / "no_task.yaml") << "run: {name: x}\ntrain: {steps: 1}\n";
  Result no_task = moh("train " + (dir_ / "no_task.yaml").string());
  EXPECT_EQ(no_task.status, 2);
  EXPECT_NE(no_task.output.find("'task'"), std::string::npos) << no_task.output;
  Result bad_task = moh("train " + config() + " task=nonexistent");
  EXPECT_EQ(bad_task.status, 2);
  EXPECT_NE(bad_task.output.find("synthetic"), std::string::npos) << bad_task.output;
}

TEST_F(Cli, TrainThenEvaluatePrintJsonLastLines) {
  Result train = moh("train " + config());
  ASSERT_EQ(train.status, 0) << train.output;
  auto summary = nlohmann::json::parse(train.last_line());
  EXPECT_EQ(summary["step"], 30);
  EXPECT_TRUE(summary.contains("eval/top1"));
  const fs::path run = dir_ / "runs" / "cli";
  Result eval = moh("eval " + run.string());
  ASSERT_EQ(eval.status, 0) << eval.output;
  auto metrics = nlohmann::json::parse(eval.last_line());
  EXPECT_EQ(metrics["step"], 30);
  EXPECT_EQ(metrics["top1"], summary["eval/top1"]);  // same weights, same held-out set
  EXPECT_TRUE(fs::exists(run / "checkpoints" / "eval.json"));
  // A checkpoint path works too, with overrides applied to the stored config.
  Result eval_file = moh("eval " + (run / "checkpoints" / "step_00000020.h5").string() + " data.eval_size=128");
  ASSERT_EQ(eval_file.status, 0) << eval_file.output;
  EXPECT_EQ(nlohmann::json::parse(eval_file.last_line())["step"], 20);
}

TEST_F(Cli, EvalUsesTheEmaWeightsWhenAsked) {
  Result train = moh("train " + config() + " ema.decay=0.5 eval.use_ema=true");
  ASSERT_EQ(train.status, 0) << train.output;
  const auto summary = nlohmann::json::parse(train.last_line());
  const std::string run = (dir_ / "runs" / "cli").string();
  const auto ema = nlohmann::json::parse(moh("eval " + run).last_line());
  EXPECT_EQ(ema["weights"], "ema");
  EXPECT_EQ(ema["loss"], summary["eval/loss"]);  // the run's last evaluation was of the EMA weights
  const auto trained = nlohmann::json::parse(moh("eval " + run + " eval.use_ema=false").last_line());
  EXPECT_EQ(trained["weights"], "trained");
  EXPECT_NE(trained["loss"], ema["loss"]);
  // A run without EMA weights cannot be evaluated with them.
  ASSERT_EQ(moh("train " + config() + " run.name=plain").status, 0);
  Result refused = moh("eval " + (dir_ / "runs" / "plain").string() + " eval.use_ema=true");
  EXPECT_EQ(refused.status, 1) << refused.output;
  EXPECT_NE(refused.output.find("holds no EMA weights"), std::string::npos) << refused.output;
}

TEST_F(Cli, SigintSavesACheckpointAndExitsCleanly) {
  const fs::path metrics = dir_ / "runs" / "cli" / "metrics.jsonl";
  const std::string cli = MOH_TEST_PATH(MOH_CLI_PATH), cfg = config();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    execl(cli.c_str(), "moh", "train", cfg.c_str(), "train.steps=100000000", "checkpoint.every=0", nullptr);
    _exit(127);
  }
  // Wait until training is under way (metrics appear), then interrupt it like Ctrl-C.
  for (int i = 0; i < 200 && (!fs::exists(metrics) || fs::file_size(metrics) == 0); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(fs::exists(metrics)) << "training did not start";
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  Result eval = moh("eval " + (dir_ / "runs" / "cli").string());
  ASSERT_EQ(eval.status, 0) << eval.output;
  const int64_t step = nlohmann::json::parse(eval.last_line())["step"];
  EXPECT_GT(step, 0);
  EXPECT_LT(step, 100000000);
}

// A second Ctrl-C during a long step (2 s here: 8 micro-batches of a wide MLP) exits at once with
// status 130 and writes no checkpoint; the first one is acknowledged on stderr.
TEST_F(Cli, SecondSigintExitsAtOnceWithoutACheckpoint) {
  const fs::path run = dir_ / "runs" / "cli", out = dir_ / "train.out";
  const std::string cli = MOH_TEST_PATH(MOH_CLI_PATH), cfg = config();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    freopen(out.c_str(), "w", stdout);
    freopen(out.c_str(), "a", stderr);
    execl(cli.c_str(), "moh", "train", cfg.c_str(), "train.steps=1000", "checkpoint.every=0", "eval.every=0",
          "train.log_every=1", "train.batch_size=8192", "train.grad_accum=8", "data.train_size=8192",
          "data.features=1024", "model.hidden=2048", "threads=1", nullptr);
    _exit(127);
  }
  auto output = [&] {
    std::ifstream in(out);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  auto wait_for = [&](const std::string& phrase, int seconds) {
    const auto start = std::chrono::steady_clock::now();
    while (output().find(phrase) == std::string::npos) {
      if (std::chrono::steady_clock::now() - start > std::chrono::seconds(seconds)) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  };
  // Right after a step ends the next one has just begun: both interrupts land inside it.
  ASSERT_TRUE(wait_for("step 1/1000", 60)) << output();
  kill(pid, SIGINT);
  ASSERT_TRUE(wait_for("interrupt again to exit at once", 10)) << output();
  const auto second = std::chrono::steady_clock::now();
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - second, std::chrono::seconds(1)) << "the second interrupt must not wait";
  ASSERT_TRUE(WIFEXITED(status)) << output();
  EXPECT_EQ(WEXITSTATUS(status), 130) << output();
  EXPECT_NE(output().find("second interrupt: exiting now without a checkpoint"), std::string::npos) << output();
  EXPECT_FALSE(fs::exists(run / "checkpoints") && !fs::is_empty(run / "checkpoints")) << output();
}

TEST_F(Cli, RuntimeFailuresExitOne) {
  Result missing = moh("eval " + (dir_ / "no_such_run").string());
  EXPECT_EQ(missing.status, 1) << missing.output;
  std::ofstream(dir_ / "garbage.h5") << "not a checkpoint";
  Result corrupt = moh("eval " + (dir_ / "garbage.h5").string());
  EXPECT_EQ(corrupt.status, 1) << corrupt.output;
  EXPECT_NE(corrupt.output.find("garbage.h5"), std::string::npos) << corrupt.output;
}

}  // namespace
}  // namespace moh
