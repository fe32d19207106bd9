// AttentionSpec: list broadcasting, per-block checks (messages name the config keys), the active-head
// share and the layer each block gets.
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
  spec.router = MoHRouter::QueryNorm;
  spec.validate(3, 4);
  for (int64_t b = 0; b < 3; ++b) {
    const auto moh = spec.block(b, 3);
    ASSERT_TRUE(moh.has_value());
    EXPECT_EQ(moh->shared_heads, 1);
    EXPECT_EQ(moh->routed_topk, spec.routed_topk[size_t(b)]);
    EXPECT_EQ(moh->execution, MoHExecution::Dense);
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

}  // namespace
}  // namespace moh
