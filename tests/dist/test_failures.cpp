// A rank that does not arrive never leaves the others hanging: `mpirun -np 2` jobs of the failure
// scenarios (scenarios.h) must end non-zero, well within their timeout, with a report naming the
// rank that failed and the collective (#seq, name, label).
#include <gtest/gtest.h>

#include <unistd.h>

#include <climits>

#include "tests/dist/dist_test_util.h"

namespace moh::dist::test {
namespace {

std::string self_path() {
  char buf[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return std::string(buf, size_t(std::max<ssize_t>(n, 0)));
}

Outcome scenario(const std::string& name) { return run_command(mpirun(2) + self_path() + " --scenario=" + name); }

void expect_in(const Outcome& r, const std::string& phrase) {
  EXPECT_NE(r.output.find(phrase), std::string::npos) << "missing '" << phrase << "' in:\n" << r.output;
}

TEST(DistFailures, RankThatSkipsACollectiveIsNamedAfterTheTimeout) {
  MOH_SKIP_UNLESS_MPIRUN();
  const Outcome r = scenario("skip_collective");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_LT(r.seconds, 20) << "rank 1 sleeps 60 s: the failed rank 0 must abort the job";
  expect_in(r, "rank 0 of 2");
  expect_in(r, "collective #1 all_reduce 'skipped by rank 1' (64 float32) did not complete within");
  expect_in(r, "rank 1 did not arrive");
}

TEST(DistFailures, KilledRankEndsTheJobNamingIt) {
  MOH_SKIP_UNLESS_MPIRUN();
  const Outcome r = scenario("kill_rank");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_LT(r.seconds, 30) << "the job must end within the 30 s timeout";
  expect_in(r, "rank 1");
}

}  // namespace
}  // namespace moh::dist::test
