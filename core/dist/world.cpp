// The process-wide communicators (see world.h).
#include "core/dist/world.h"

#include <map>
#include <mutex>

#include "core/dist/backends.h"

namespace moh::dist {
namespace {

struct State {
  std::mutex mutex;
  double timeout_s = 600;
  std::unique_ptr<Communicator> world;                // destroyed last: MPI finalises here
  std::map<int, std::unique_ptr<Communicator>> gpus;  // NCCL communicators by CUDA device
};

State& state() {
  static State s;
  return s;
}

Communicator& world_locked(State& s) {
  if (s.world) return *s.world;
  if (!is_distributed()) {
    s.world = make_local_communicator();
  } else {
#if MOH_WITH_MPI
    s.world = detail::make_mpi_world(launch_env(), s.timeout_s);
#else
    MOH_FAIL("the launcher (", launch_env().launcher, ") started ", launch_env().world_size,
             " processes but this build has no MPI backend (install libopenmpi-dev and rebuild)");
#endif
  }
  s.world->set_timeout(s.timeout_s);
  return *s.world;
}

#if MOH_WITH_NCCL
// Picks this rank's GPU before main() runs, so no CUDA call can happen on another device first.
const int g_local_gpu = detect_launch_env().world_size > 1 ? detail::bind_local_gpu(detect_launch_env()) : -1;
#endif

}  // namespace

const LaunchEnv& launch_env() {
  static const LaunchEnv env = detect_launch_env();
  return env;
}

bool is_distributed() { return launch_env().world_size > 1; }

bool mpi_compiled() { return MOH_WITH_MPI != 0; }
bool nccl_compiled() { return MOH_WITH_NCCL != 0; }

Communicator& world() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return world_locked(s);
}

Communicator& communicator_for(Device device) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  Communicator& cpu = world_locked(s);
  if (device.is_cpu()) return cpu;
#if MOH_WITH_NCCL
  auto& comm = s.gpus[device.index];
  if (!comm) comm = detail::make_nccl_communicator(cpu, device.index, s.timeout_s);
  return *comm;
#else
  MOH_FAIL("collectives on ", device, " need the NCCL backend, which this build lacks (a CUDA build with NCCL)");
#endif
}

void set_timeout(double seconds) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  MOH_CHECK(seconds > 0, "distributed timeout must be positive, got ", seconds, " s");
  s.timeout_s = seconds;
  if (s.world) s.world->set_timeout(seconds);
  for (auto& [index, comm] : s.gpus) comm->set_timeout(seconds);
}

void mark_failed() {
#if MOH_WITH_MPI
  if (is_distributed()) detail::mpi_mark_failed();
#endif
}

}  // namespace moh::dist
