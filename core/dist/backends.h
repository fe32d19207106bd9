// Factories of the backends that need optional libraries (internal to core/dist; use world.h).
// make_mpi_world initialises MPI (thread level SERIALIZED: one progress thread issues every call)
// and checks the world it finds against the launcher environment. make_nccl_communicator makes
// one NCCL communicator over the ranks of `cpu_world` for GPU `device`, the unique id broadcast
// through `cpu_world`.
#pragma once

#include <memory>

#include "core/dist/communicator.h"
#include "core/dist/launch_env.h"

namespace moh::dist::detail {

#if MOH_WITH_MPI
std::unique_ptr<Communicator> make_mpi_world(const LaunchEnv& env, double timeout_s);
// At destruction the MPI world aborts the job instead of finalising (see world.h).
void mpi_mark_failed();
#endif

#if MOH_WITH_NCCL
std::unique_ptr<Communicator> make_nccl_communicator(Communicator& cpu_world, int device, double timeout_s);
// The GPU this process should use under a launcher: local_rank % number of GPUs (-1 without GPUs).
int bind_local_gpu(const LaunchEnv& env);
#endif

}  // namespace moh::dist::detail
