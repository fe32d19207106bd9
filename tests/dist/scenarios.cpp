// The failure scenarios (see scenarios.h).
#include "tests/dist/scenarios.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "core/dist/world.h"
#include "core/factory.h"

namespace moh::dist::test {

int run_scenario(const std::string& name) {
  Communicator& comm = world();
  comm.set_timeout(1.0);
  Tensor t = full({64}, 1.0);
  try {
    comm.barrier("start")->wait();  // #0: everyone is up
    if (name == "skip_collective") {
      if (comm.rank() == 1) {
        std::this_thread::sleep_for(std::chrono::seconds(60));  // never joins #1
        return 0;
      }
      all_reduce(comm, t, ReduceOp::Sum, "skipped by rank 1");
    } else if (name == "kill_rank") {
      comm.set_timeout(30);
      for (int i = 0; i < 1000; ++i) {
        if (i == 5 && comm.rank() == 1) raise(SIGKILL);
        all_reduce(comm, t, ReduceOp::Sum, "step " + std::to_string(i));
      }
    } else {
      std::cerr << "unknown scenario '" << name << "'\n";
      return 2;
    }
  } catch (const DistError& e) {
    std::cerr << "moh: error: " << e.what() << std::endl;
    mark_failed();
    return 1;
  }
  return 0;
}

}  // namespace moh::dist::test
