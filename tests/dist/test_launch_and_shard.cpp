// What does not need a second process: the launcher-environment parsing (OpenMPI, PMI, srun, none,
// malformed values) and the sharded EpochSampler (the ranks' blocks are disjoint and together are
// exactly what one process draws, across epoch ends; the position is global, so a state saved at
// one world size continues identically at another).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/dist/launch_env.h"
#include "data/epoch_sampler.h"
#include "tests/test_util.h"

namespace moh::dist {
namespace {

LaunchEnv detect(const std::map<std::string, std::string>& vars) {
  return detect_launch_env([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(LaunchEnv, RecognisesTheLaunchers) {
  LaunchEnv none = detect({{"LOCAL_RANK", "3"}, {"SLURM_PROCID", "2"}});  // no size: not launched
  EXPECT_EQ(none.world_size, 1);
  EXPECT_EQ(none.rank, 0);
  EXPECT_EQ(none.launcher, "none");
  LaunchEnv ompi = detect({{"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_RANK", "5"},
                           {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  EXPECT_EQ(ompi.launcher, "openmpi");
  EXPECT_EQ(ompi.world_size, 8);
  EXPECT_EQ(ompi.rank, 5);
  EXPECT_EQ(ompi.local_rank, 1);
  EXPECT_EQ(ompi.local_size, 4);
  LaunchEnv pmi = detect({{"PMI_SIZE", "4"}, {"PMI_RANK", "3"}, {"MPI_LOCALRANKID", "1"}});
  EXPECT_EQ(pmi.launcher, "pmi");
  EXPECT_EQ(pmi.rank, 3);
  EXPECT_EQ(pmi.local_rank, 1);
  EXPECT_EQ(pmi.local_size, 2);  // at least local_rank + 1 when the launcher does not say
  LaunchEnv srun = detect({{"SLURM_STEP_NUM_TASKS", "16"}, {"SLURM_PROCID", "9"}, {"SLURM_LOCALID", "1"}});
  EXPECT_EQ(srun.launcher, "slurm");
  EXPECT_EQ(srun.world_size, 16);
  EXPECT_EQ(srun.rank, 9);
  EXPECT_EQ(srun.local_rank, 1);
}

TEST(LaunchEnv, MalformedValuesAreNamed) {
  test::expect_error([] { detect({{"OMPI_COMM_WORLD_SIZE", "two"}, {"OMPI_COMM_WORLD_RANK", "0"}}); },
                     {"OMPI_COMM_WORLD_SIZE='two'", "not a non-negative integer"});
  test::expect_error([] { detect({{"PMI_SIZE", "2"}}); }, {"pmi", "not the rank", "PMI_RANK"});
  test::expect_error([] { detect({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "2"}}); },
                     {"rank 2 is outside a world of size 2"});
  test::expect_error([] { detect({{"PMI_SIZE", "-1"}, {"PMI_RANK", "0"}}); }, {"PMI_SIZE='-1'"});
}

}  // namespace
}  // namespace moh::dist

namespace moh {
namespace {

TEST(ShardedSampler, RanksTakeDisjointBlocksOfTheGlobalOrder) {
  const int64_t n = 23, per_rank = 4;  // 12 per step: steps cross epoch ends at odd places
  for (int64_t world : {1, 2, 3}) {
    EpochSampler single(n, 42, "single", {0, 1});
    std::vector<EpochSampler> ranks;
    for (int64_t r = 0; r < world; ++r) ranks.emplace_back(n, 42, "rank", SamplerShard{r, world});
    for (int step = 0; step < 9; ++step) {
      std::vector<int64_t> single_epochs, expected = single.next(per_rank * world, &single_epochs);
      for (int64_t r = 0; r < world; ++r) {
        std::vector<int64_t> epochs;
        const std::vector<int64_t> ids = ranks[size_t(r)].next(per_rank, &epochs);
        const auto first = expected.begin() + r * per_rank;
        EXPECT_EQ(ids, std::vector<int64_t>(first, first + per_rank)) << "world " << world << " rank " << r;
        EXPECT_EQ(epochs, std::vector<int64_t>(single_epochs.begin() + r * per_rank,
                                               single_epochs.begin() + (r + 1) * per_rank));
        EXPECT_EQ(ranks[size_t(r)].state(), single.state()) << "the position is global";
      }
    }
  }
}

TEST(ShardedSampler, PositionResumesOnAnotherWorldSize) {
  EpochSampler two_a(50, 7, "a", {0, 2}), two_b(50, 7, "b", {1, 2});
  for (int step = 0; step < 7; ++step) two_a.next(6), two_b.next(6);
  EpochSampler one(50, 7, "one", {0, 1}), reference(50, 7, "ref", {0, 1});
  one.load_state(two_a.state());
  for (int step = 0; step < 7; ++step) reference.next(12);
  for (int step = 0; step < 5; ++step) EXPECT_EQ(one.next(12), reference.next(12)) << step;
  EpochSampler three(50, 7, "three", {2, 3});
  three.load_state(one.state());
  const std::vector<int64_t> global = reference.next(12);
  EXPECT_EQ(three.next(4), std::vector<int64_t>(global.begin() + 8, global.end()));
}

TEST(ShardedSampler, BadShardIsRejected) {
  test::expect_error([] { EpochSampler(10, 1, "data", {2, 2}); }, {"data", "shard rank 2", "world of size 2"});
  test::expect_error([] { EpochSampler(10, 1, "data", {0, 0}); }, {"world of size 0"});
  EpochSampler s(10, 1, "data", {0, 1});
  test::expect_error([&] { s.next(-1); }, {"cannot draw -1"});
}

}  // namespace
}  // namespace moh
