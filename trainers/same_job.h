// check_ranks_run_same_job(): the start-up proof that every data-parallel rank runs the same job.
// Ranks compare a digest of their resolved config (every key except kPerRankKeys, which may differ
// between ranks) and their step count; when all agree this costs one all_gather of two integers.
// Otherwise the ranks exchange their configs and every rank throws a ConfigError, rank 0's naming the
// first differing key with both values and the ranks that differ from rank 0 (the others' say that
// rank 0 reports), so the whole job stops with one message instead of running diverging replicas
// or collectives that do not match (which corrupt memory).
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "core/dist/communicator.h"
#include "trainers/config.h"

namespace moh {

// Keys a rank may set on its own: CPU threads per process (nodes may differ in cores).
extern const std::set<std::string> kPerRankKeys;

// Collective over `host` (a CPU communicator); `total_steps` is the optimizer steps this rank will run.
void check_ranks_run_same_job(dist::Communicator& host, const Config& cfg, int64_t total_steps);

}  // namespace moh
