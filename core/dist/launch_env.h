// What the launcher (mpirun, srun, a PMI-based launcher, or nothing) says about this process, read
// from the environment before any MPI or CUDA call: world size, rank, local rank and local size.
// No launcher variables means a plain single process: world size 1, rank 0, and no MPI set-up.
// Recognised: OpenMPI (OMPI_COMM_WORLD_*), PMI/MPICH/Hydra (PMI_SIZE, PMI_RANK, MPI_LOCALRANKID),
// PMIx (PMIX_RANK with one of the size variables), Slurm's srun (SLURM_STEP_NUM_TASKS, SLURM_PROCID,
// SLURM_LOCALID) and the generic LOCAL_RANK / LOCAL_WORLD_SIZE.
#pragma once

#include <functional>
#include <string>

namespace moh::dist {

struct LaunchEnv {
  int world_size = 1;
  int rank = 0;
  int local_rank = 0;
  int local_size = 1;
  std::string launcher = "none";  // "openmpi", "pmi", "slurm" or "none"
};

// `getenv` is injectable for tests; throws moh::Error on malformed or inconsistent values.
LaunchEnv detect_launch_env(const std::function<const char*(const char*)>& getenv);
LaunchEnv detect_launch_env();  // the process environment

}  // namespace moh::dist
