// Failure scenarios that tests/dist/test_failures.cpp runs as `mpirun -np 2 moh_dist_tests
// --scenario=NAME` (each needs its own job: a failed collective breaks the communicator):
//   skip_collective  rank 1 sleeps instead of joining an all_reduce (timeout 1 s on rank 0),
//   kill_rank        rank 1 dies (SIGKILL) between all_reduces.
// Returns the process exit status (non-zero after a DistError, whose message goes to stderr).
#pragma once

#include <string>

namespace moh::dist::test {

int run_scenario(const std::string& name);

}  // namespace moh::dist::test
