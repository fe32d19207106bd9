// Runs the built `moh` executable through the shell and captures its exit status and output, for
// the CLI tests.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "tests/test_paths.h"

namespace moh::test {

struct CliResult {
  int status = -1;
  std::string out;  // stdout, plus stderr when asked for
};

// `moh ARGS` (ARGS may hold shell redirections such as "< file"); stderr is merged into out unless
// `stderr_too` is false, in which case it is discarded.
inline CliResult run_moh(const std::string& args, bool stderr_too = true) {
  CliResult r;
  const std::string command = MOH_TEST_PATH(MOH_CLI_PATH) + " " + args + (stderr_too ? " 2>&1" : " 2>/dev/null");
  FILE* pipe = popen(command.c_str(), "r");
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) r.out.append(buf, n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace moh::test
