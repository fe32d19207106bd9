// AttentionSpec: list broadcasting, per-block checks (messages name the config keys), per-block head
// counts, the active-head share and the layer each block gets.
#include <gtest/gtest.h>

#include "layers/attention_spec.h"
#include "tests/layers/layer_test_util.h"

namespace moh {
namespace {

AttentionOptions small_attention() {
  AttentionOptions a;
  a.dim = 16;
  a.num_heads = 4;
  return a;
}

TEST(AttentionSpec, EmptyListsAreMhaEverywhere) {
  AttentionSpec spec;
  spec.validate(3, 4);
  EXPECT_FALSE(spec.any_moh());
  EXPECT_FALSE(spec.block(2, 3).has_value());
  EXPECT_DOUBLE_EQ(spec.active_share(3, 4), 1.0);
  Generator gen(1);
  auto layer = make_block_attention(spec, 0, 3, small_attention(), gen);
  EXPECT_EQ(layer->type_name(), "MultiHeadAttention");
}

TEST(AttentionSpec, OneValueBroadcastsAndListsArePerBlock) {
  AttentionSpec spec;
  spec.shared_heads = {1};
  spec.routed_topk = {0, 2, 1};
  spec.execution = MoHExecution::Dense;
  spec.projections = MoHProjections::Gathered;
  spec.router = MoHRouter::QueryNorm;
  spec.validate(3, 4);
  for (int64_t b = 0; b < 3; ++b) {
    const auto moh = spec.block(b, 3);
    ASSERT_TRUE(moh.has_value());
    EXPECT_EQ(moh->shared_heads, 1);
    EXPECT_EQ(moh->routed_topk, spec.routed_topk[size_t(b)]);
    EXPECT_EQ(moh->execution, MoHExecution::Dense);
    EXPECT_EQ(moh->projections, MoHProjections::Gathered);
    EXPECT_EQ(moh->router, MoHRouter::QueryNorm);
  }
  // Block 0 has every head shared (K = 0); blocks 1 and 2 use 3/4 and 2/4 of the heads.
  EXPECT_DOUBLE_EQ(spec.active_share(3, 4), (1.0 + 0.75 + 0.5) / 3);
  Generator gen(1);
  auto layer = make_block_attention(spec, 1, 3, small_attention(), gen);
  auto* moh = dynamic_cast<MoHAttention*>(layer.get());
  ASSERT_NE(moh, nullptr);
  EXPECT_EQ(moh->moh_options().routed_topk, 2);
}

TEST(AttentionSpec, BadListsNameTheKeyAndTheBlock) {
  AttentionSpec spec;
  spec.shared_heads = {1};
  EXPECT_ERROR_MENTIONS(spec.validate(2, 4), "model.routed_topk is empty");
  spec.routed_topk = {1, 1, 1};
  EXPECT_ERROR_MENTIONS(spec.validate(2, 4), "model.routed_topk has 3 values");
  spec.routed_topk = {1, 4};
  EXPECT_ERROR_MENTIONS(spec.validate(2, 4), "model.routed_topk 4 (block 1) exceeds the 3 routed heads");
  spec.shared_heads = {5};
  spec.routed_topk = {0};
  EXPECT_ERROR_MENTIONS(spec.validate(2, 4), "model.shared_heads 5 (block 0) exceeds model.heads 4");
  EXPECT_ERROR_MENTIONS(spec.block(2, 2), "out of range");
}

TEST(AttentionSpec, PerBlockHeadCountsShapeTheLayersAndWeighTheShare) {
  AttentionSpec spec;
  spec.heads = {2, 4, 8};
  spec.shared_heads = {2, 1, 4};
  spec.routed_topk = {0, 2, 2};
  spec.validate(3, 4);
  EXPECT_EQ(spec.block_heads(0, 4), 2);
  EXPECT_EQ(spec.block_heads(2, 4), 8);
  // Active query rows over all rows: (2 + 3 + 6) / (2 + 4 + 8), not the mean of the blocks' shares.
  EXPECT_DOUBLE_EQ(spec.active_share(3, 4), 11.0 / 14);
  Generator gen(1);
  AttentionOptions a = small_attention();  // dim 16
  a.head_dim = 4;
  for (int64_t b = 0; b < 3; ++b) {
    auto layer = make_block_attention(spec, b, 3, a, gen);
    EXPECT_EQ(layer->options().num_heads, spec.heads[size_t(b)]);
    EXPECT_EQ(layer->state_dict().at("qkv.weight").shape(), (Shape{3 * spec.heads[size_t(b)] * 4, 16}));
  }
  // One value applies to every block; MHA blocks take the counts too.
  AttentionSpec mha;
  mha.heads = {8};
  mha.validate(2, 4);
  EXPECT_EQ(make_block_attention(mha, 1, 2, small_attention(), gen)->options().num_heads, 8);
  EXPECT_EQ(make_block_attention(mha, 1, 2, small_attention(), gen)->options().head_dim, 2);  // 16 / 8
}

TEST(AttentionSpec, BadHeadCountsNameTheKeyAndTheBlock) {
  AttentionSpec spec;
  spec.heads = {2, 4, 8};
  EXPECT_ERROR_MENTIONS(spec.validate(2, 4), "model.block_heads has 3 values");
  spec.heads = {2, 0};
  EXPECT_ERROR_MENTIONS(spec.validate(2, 4), "model.block_heads must be positive, got 0 (block 1)");
  spec.heads = {2, 4};
  spec.shared_heads = {1, 3};
  spec.routed_topk = {2, 1};
  EXPECT_ERROR_MENTIONS(spec.validate(2, 4),
                        "model.routed_topk 2 (block 0) exceeds the 1 routed heads (model.block_heads 2");
  spec.shared_heads = {1, 5};
  spec.routed_topk = {1, 0};
  EXPECT_ERROR_MENTIONS(spec.validate(2, 4), "model.shared_heads 5 (block 1) exceeds model.block_heads 4");
  // A count that does not divide the width (head_dim from dim): the factory names the block.
  spec.shared_heads.clear(), spec.routed_topk.clear();
  spec.heads = {4, 3};
  spec.validate(2, 4);
  Generator gen(1);
  EXPECT_ERROR_MENTIONS(make_block_attention(spec, 1, 2, small_attention(), gen), "block 1 (3 heads)");
}

}  // namespace
}  // namespace moh
