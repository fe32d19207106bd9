// Sharded evaluation (trainers/eval_shard.h) on however many ranks the binary runs (1 alone, 2 under
// `mpirun -np 2`): the shards of any set size over any world size are contiguous, in rank order,
// cover every sample once and differ in size by at most one; the sums are added over ranks; the
// gathered per-sample rows are the whole set in sample order on every rank, also when the shards
// differ in size or a rank's shard is empty; a shard of the wrong size is refused naming the rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/dist/world.h"
#include "core/factory.h"
#include "tests/test_util.h"
#include "trainers/eval_shard.h"

namespace moh {
namespace {

TEST(EvalShard, ShardsPartitionTheSetInRankOrder) {
  for (int world = 1; world <= 4; ++world)
    for (int64_t samples : {0, 1, 3, 7, 10000}) {
      int64_t next = 0, smallest = samples, largest = 0;
      for (int r = 0; r < world; ++r) {
        const EvalShard s = eval_shard(samples, r, world);
        EXPECT_EQ(s.begin, next) << samples << " over " << world << ", rank " << r;
        next = s.end;
        smallest = std::min(smallest, s.size());
        largest = std::max(largest, s.size());
      }
      EXPECT_EQ(next, samples) << samples << " over " << world;
      EXPECT_LE(largest - smallest, 1) << samples << " over " << world;
    }
  EXPECT_THROW(eval_shard(5, 2, 2), Error);
}

TEST(EvalShard, SumsAreAddedOverRanks) {
  const dist::Communicator& world = dist::world();
  std::vector<double> sums{double(world.rank()) + 0.5, 1.0, 0.0};
  reduce_eval_sums(sums);
  const double n = world.size();
  EXPECT_EQ(sums, (std::vector<double>{n * (n - 1) / 2 + 0.5 * n, n, 0.0}));
}

// Each rank fills its shard's rows with their global sample index (and its rank), as an evaluation
// writes the logits of its own samples.
TEST(EvalShard, GatheredRowsAreTheWholeSetInSampleOrder) {
  const dist::Communicator& world = dist::world();
  for (int64_t samples : {7, 1, 4}) {  // 1: the second rank of two holds no sample
    const EvalShard own = eval_shard(samples);
    std::vector<float> rows;
    std::vector<int64_t> ids;
    for (int64_t i = own.begin; i < own.end; ++i) {
      rows.insert(rows.end(), {float(i), float(world.rank())});
      ids.push_back(i);
    }
    const Tensor logits = gather_eval_rows(from_vector(rows, {own.size(), 2}), samples);
    const Tensor labels = gather_eval_rows(from_vector(ids, {own.size()}, DType::Int64), samples);
    ASSERT_EQ(logits.shape(), (Shape{samples, 2}));
    std::vector<float> expected_rows;
    std::vector<int64_t> expected_ids;
    for (int r = 0; r < world.size(); ++r) {
      const EvalShard s = eval_shard(samples, r, world.size());
      for (int64_t i = s.begin; i < s.end; ++i) {
        expected_rows.insert(expected_rows.end(), {float(i), float(r)});
        expected_ids.push_back(i);
      }
    }
    EXPECT_EQ(logits.to_vector<float>(), expected_rows) << samples;
    EXPECT_EQ(labels.to_vector<int64_t>(), expected_ids) << samples;
  }
  // Checked before any collective, so a rank with a wrong shard throws alone and no peer waits.
  test::expect_error([&] { gather_eval_rows(zeros({eval_shard(7).size() + 1, 2}), 7); },
                     {"gather_eval_rows: rank " + std::to_string(world.rank()), "its shard is"});
}

}  // namespace
}  // namespace moh
