// Sharded evaluation over dist::world() (see eval_shard.h).
#include "trainers/eval_shard.h"

#include <algorithm>

#include "core/dist/world.h"
#include "core/factory.h"
#include "core/ops.h"

namespace moh {

EvalShard eval_shard(int64_t samples, int rank, int world) {
  MOH_CHECK(samples >= 0 && world > 0 && rank >= 0 && rank < world, "eval_shard: rank ", rank, " of ", world,
            " over ", samples, " samples");
  const int64_t base = samples / world, extra = samples % world;  // the first `extra` ranks take one more
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

EvalShard eval_shard(int64_t samples) {
  dist::Communicator& world = dist::world();
  return eval_shard(samples, world.rank(), world.size());
}

void reduce_eval_sums(std::vector<double>& sums) {
  dist::Communicator& world = dist::world();
  if (world.size() == 1 || sums.empty()) return;
  Tensor t = from_vector(sums, {int64_t(sums.size())}, DType::Float64);
  dist::all_reduce(world, t, dist::ReduceOp::Sum, "eval sums");
  sums = t.to_vector<double>();
}

Tensor gather_eval_rows(const Tensor& mine, int64_t samples) {
  const int ranks = dist::world().size();
  std::vector<EvalShard> shards;
  for (int r = 0; r < ranks; ++r) shards.push_back(eval_shard(samples, r, ranks));
  return gather_shard_rows(mine, shards);
}

Tensor gather_shard_rows(const Tensor& mine, const std::vector<EvalShard>& shards) {
  dist::Communicator& world = dist::world();
  const int ranks = world.size();
  MOH_CHECK(int(shards.size()) == ranks, "gather_shard_rows: ", shards.size(), " shards for ", ranks, " ranks");
  const EvalShard own = shards[size_t(world.rank())];
  MOH_CHECK(mine.dim() >= 1 && mine.size(0) == own.size() && mine.device().is_cpu(), "gather_eval_rows: rank ",
            world.rank(), " holds ", describe(mine), " but its shard is ", own.size(), " rows (on the CPU)");
  if (ranks == 1) return mine;
  // all_gather needs equal blocks: every shard padded to the largest.
  int64_t rows = 0;
  for (const EvalShard& shard : shards) rows = std::max(rows, shard.size());
  Shape block = mine.shape();
  block[0] = rows;
  Tensor padded = zeros(block, mine.dtype());
  padded.narrow(0, 0, own.size()).copy_(mine);
  const Tensor all = dist::all_gather(world, padded, "eval rows");  // [ranks, rows, ...]
  Shape whole = mine.shape();
  whole[0] = shards.back().end;
  Tensor out = Tensor::empty(whole, mine.dtype());
  for (int r = 0; r < ranks; ++r) {
    const EvalShard& shard = shards[size_t(r)];
    out.narrow(0, shard.begin, shard.size()).copy_(all.select(0, r).narrow(0, 0, shard.size()));
  }
  return out;
}

}  // namespace moh
