// Launcher environment detection (see launch_env.h).
#include "core/dist/launch_env.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "core/error.h"

namespace moh::dist {
namespace {

using Getenv = std::function<const char*(const char*)>;

// The first of `names` that is set, parsed as a non-negative int.
std::optional<int> first_int(const Getenv& getenv, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* text = getenv(name);
    if (!text || !*text) continue;
    int value = -1;
    const char* end = text + std::strlen(text);
    auto [ptr, ec] = std::from_chars(text, end, value);
    MOH_CHECK(ec == std::errc() && ptr == end && value >= 0, "launcher variable ", name, "='", text,
              "' is not a non-negative integer");
    return value;
  }
  return std::nullopt;
}

}  // namespace

LaunchEnv detect_launch_env(const Getenv& getenv) {
  LaunchEnv env;
  struct Launcher {
    const char* name;
    std::initializer_list<const char*> size, rank, local_rank, local_size;
  };
  const Launcher launchers[] = {
      {"openmpi", {"OMPI_COMM_WORLD_SIZE"}, {"OMPI_COMM_WORLD_RANK"}, {"OMPI_COMM_WORLD_LOCAL_RANK"},
       {"OMPI_COMM_WORLD_LOCAL_SIZE"}},
      {"pmi", {"PMI_SIZE"}, {"PMI_RANK", "PMIX_RANK"}, {"MPI_LOCALRANKID", "LOCAL_RANK"},
       {"MPI_LOCALNRANKS", "LOCAL_WORLD_SIZE"}},
      {"slurm", {"SLURM_STEP_NUM_TASKS"}, {"SLURM_PROCID", "PMIX_RANK"}, {"SLURM_LOCALID", "LOCAL_RANK"},
       {"SLURM_NTASKS_PER_NODE", "LOCAL_WORLD_SIZE"}},
  };
  for (const Launcher& l : launchers) {
    const std::optional<int> size = first_int(getenv, l.size);
    if (!size) continue;
    const std::optional<int> rank = first_int(getenv, l.rank);
    MOH_CHECK(rank.has_value(), "launcher ", l.name, " sets the world size (", *l.size.begin(), "=", *size,
              ") but not the rank (", *l.rank.begin(), ")");
    MOH_CHECK(*size >= 1 && *rank < *size, "launcher ", l.name, ": rank ", *rank, " is outside a world of size ",
              *size);
    env.world_size = *size;
    env.rank = *rank;
    env.local_rank = first_int(getenv, l.local_rank).value_or(0);
    env.local_size = std::max(env.local_rank + 1, first_int(getenv, l.local_size).value_or(1));
    env.launcher = l.name;
    return env;
  }
  return env;
}

LaunchEnv detect_launch_env() {
  return detect_launch_env([](const char* name) { return std::getenv(name); });
}

}  // namespace moh::dist
