// The shared attention keys (trainers/attention_config.h) reach the AttentionSpec and through it every
// MoH block: execution, sparse projections and router from their keys, defaults when unset, and a bad
// enum value named by its key.
#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "trainers/attention_config.h"
#include "trainers/config.h"
#include "trainers/trainer.h"

namespace moh {
namespace {

constexpr const char* kMoH =
    "task: llm\nrun: {name: r}\ntrain: {steps: 1}\ndata: {dir: d, tokenizer: t.json}\n"
    "model: {attention: moh, shared_heads: [1], routed_topk: [2], depth: 2}\n";

AttentionSpec spec_of(const std::vector<std::string>& overrides) {
  const Config cfg = Config::parse(kMoH, training_schema("llm"), "moh.yaml", overrides);
  return attention_spec_from_config(cfg, 2, 4);
}

TEST(AttentionConfig, DefaultsAreSparseAutoLearned) {
  const std::optional<MoHOptions> moh = spec_of({}).block(1, 2);
  ASSERT_TRUE(moh.has_value());
  EXPECT_EQ(moh->execution, MoHExecution::Sparse);
  EXPECT_EQ(moh->projections, MoHProjections::Auto);
  EXPECT_EQ(moh->router, MoHRouter::Learned);
}

TEST(AttentionConfig, KeysReachEveryBlock) {
  const AttentionSpec gathered = spec_of({"model.moh_projections=gathered", "model.moh_router=query_norm"});
  const AttentionSpec dense = spec_of({"model.moh_projections=dense", "model.moh_execution=dense"});
  for (int64_t b = 0; b < 2; ++b) {
    EXPECT_EQ(gathered.block(b, 2)->projections, MoHProjections::Gathered);
    EXPECT_EQ(gathered.block(b, 2)->router, MoHRouter::QueryNorm);
    EXPECT_EQ(dense.block(b, 2)->projections, MoHProjections::Dense);
    EXPECT_EQ(dense.block(b, 2)->execution, MoHExecution::Dense);
  }
}

TEST(AttentionConfig, UnknownProjectionsNameTheKey) {
  test::expect_error([] { spec_of({"model.moh_projections=grouped"}); },
                     {"model.moh_projections", "grouped", "gathered"});
}

}  // namespace
}  // namespace moh
