// Helpers of the distributed tests that launch processes: a shell command run to completion with
// its output and wall time, and the mpirun prefix (allow-root, oversubscription, one OpenMP thread
// per rank on this small machine). Tests that launch mpirun skip themselves when this build has no
// mpirun or when they already run under one.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "core/dist/world.h"
#include "tests/test_paths.h"

namespace moh::dist::test {

struct Outcome {
  int status = -1;     // exit status, or -1 when killed by a signal
  std::string output;  // stdout and stderr together
  double seconds = 0;
};

inline Outcome run_command(const std::string& command) {
  Outcome r;
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// mpirun is called by name through PATH: OpenMPI treats an absolute mpirun path as --prefix.
inline std::string mpirun(int np) {
  const std::string path = MOH_TEST_PATH(MOH_MPIRUN);
  const size_t slash = path.find_last_of('/');
  return "env PATH=" + path.substr(0, slash) + ":$PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " +
         "OMP_NUM_THREADS=1 " + path.substr(slash + 1) + " -np " + std::to_string(np) +
         " --oversubscribe --bind-to none ";
}

#define MOH_SKIP_UNLESS_MPIRUN()                                                                  \
  do {                                                                                            \
    if (MOH_TEST_PATH(MOH_MPIRUN).empty()) GTEST_SKIP() << "this build found no mpirun";          \
    if (::moh::dist::is_distributed()) GTEST_SKIP() << "launches mpirun itself: run it alone"; \
  } while (0)

}  // namespace moh::dist::test
