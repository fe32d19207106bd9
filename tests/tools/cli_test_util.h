// Running the `moh` executable from tests: its exit status and output, and a fixture with a
// 30-step synthetic-task config (run folder <tmp>/runs/cli, a checkpoint every 10 steps).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace moh::test {

struct Result {
  int status = -1;
  std::string output;  // stdout, and stderr unless discarded
  std::string last_line() const {
    std::string trimmed = output.substr(0, output.find_last_not_of('\n') + 1);
    return trimmed.substr(trimmed.find_last_of('\n') + 1);
  }
};

// Runs a bash command line (no single quotes in it); stderr is merged into the output unless
// `stderr_too` is false, in which case it is discarded.
inline Result shell(const std::string& command, bool stderr_too = true) {
  Result r;
  FILE* pipe = popen(("bash -c '" + command + "'" + (stderr_too ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The `moh` executable's path, and `moh ARGS` run through bash (ARGS may hold redirections such as
// "< file"; no single quotes).
inline std::string moh_path() { return MOH_TEST_PATH(MOH_CLI_PATH); }
inline Result moh(const std::string& args, bool stderr_too = true) { return shell(moh_path() + " " + args, stderr_too); }

class Cli : public test::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    write("syn.yaml", "task: synthetic\n"
                      "run: {name: cli, dir: " + (dir_ / "runs").string() + "}\n"
                      "train: {steps: 30, batch_size: 32, log_every: 10}\n"
                      "checkpoint: {every: 10}\n"
                      "optim: {lr: 0.01}\n"
                      "data: {train_size: 512, eval_size: 256}\n");
  }
  std::string config() const { return path("syn.yaml"); }
};

}  // namespace moh::test
