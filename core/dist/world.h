// The process's communicators. world() is the CPU communicator over every process of the job:
// the local backend (no MPI set-up at all) when the launcher environment says world size 1, the
// MPI backend otherwise (MPI is initialised on first use and finalised at exit). For CUDA memory,
// communicator_for(cuda:N) is an NCCL communicator over the same ranks, its unique id broadcast
// through world(). Under a launcher the local rank picks the GPU (local_rank % GPUs) before any
// other CUDA call the framework makes. A run that fails calls mark_failed(): at exit the process
// then aborts the whole job (MPI_Abort) instead of finalising, so no peer waits for it.
#pragma once

#include "core/dist/communicator.h"
#include "core/dist/launch_env.h"

namespace moh::dist {

const LaunchEnv& launch_env();  // detected once
bool is_distributed();          // launch_env().world_size > 1
bool mpi_compiled();            // whether this build has the MPI backend
bool nccl_compiled();           // whether this build has the NCCL backend

Communicator& world();
Communicator& communicator_for(Device device);

// Sets the deadline of every collective of world() and of device communicators made later.
void set_timeout(double seconds);
void mark_failed();

}  // namespace moh::dist
