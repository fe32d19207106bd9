// Evaluation under data parallelism: each rank evaluates one contiguous shard of the held-out set
// (shards in rank order follow the sample order, their sizes differ by at most one) and the ranks'
// sums (losses, correct counts, samples) are added, so the metrics equal one process's up to the
// order of float summation. Over dist::world(), whose ranks must all call each collective here
// together; with world size 1 the shard is the whole set and nothing is communicated.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace moh {

struct EvalShard {
  int64_t begin = 0, end = 0;  // samples [begin, end) of the held-out set
  int64_t size() const { return end - begin; }
};

// Rank `rank`'s shard of `samples` held-out samples over `world` ranks.
EvalShard eval_shard(int64_t samples, int rank, int world);
// This process's shard over dist::world().
EvalShard eval_shard(int64_t samples);
// Element-wise sum over dist::world()'s ranks, in place.
void reduce_eval_sums(std::vector<double>& sums);
// Per-sample rows of the whole set on every rank: `mine` holds this rank's shard ([shard size, ...],
// CPU) of a `samples`-row set; the result is every shard's rows concatenated in rank order.
Tensor gather_eval_rows(const Tensor& mine, int64_t samples);
// The same for any split into contiguous shards: shards[r] is rank r's rows (one per rank, in order,
// together covering [0, shards.back().end)).
Tensor gather_shard_rows(const Tensor& mine, const std::vector<EvalShard>& shards);

}  // namespace moh
