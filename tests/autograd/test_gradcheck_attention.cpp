// Finite-difference checks of the attention functions: dense (causal and not, q/k/v all
// requiring grad, a non-contiguous q) and packed query rows with positions, each also with
// grouped-query k, v (Hkv < H heads, whose gradients sum over the query heads sharing them).
#include "core/factory.h"
#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;
using Inputs = std::vector<Variable>;

TEST(GradcheckAttention, Dense) {
  for (bool causal : {false, true}) {
    EXPECT_GRADCHECK([causal](const Inputs& in) { return attention(in[0], in[1], in[2], 0.6, causal); },
                     {leaf({1, 2, 3, 4}, 1), leaf({1, 2, 5, 4}, 2), leaf({1, 2, 5, 3}, 3)});
  }
}

TEST(GradcheckAttention, DenseGroupedQuery) {
  for (bool causal : {false, true}) {  // 4 query heads on 2 K/V heads
    EXPECT_GRADCHECK([causal](const Inputs& in) { return attention(in[0], in[1], in[2], 0.6, causal); },
                     {leaf({2, 4, 3, 4}, 11), leaf({2, 2, 5, 4}, 12), leaf({2, 2, 5, 3}, 13)});
  }
}

TEST(GradcheckAttention, DenseStridedQuery) {
  Variable q(leaf({1, 4, 2, 3}, 4).data().transpose(1, 2), true);  // [1, 2, 4, 3] non-contiguous
  EXPECT_FALSE(q.data().is_contiguous());
  EXPECT_GRADCHECK([](const Inputs& in) { return attention(in[0], in[1], in[2], 0.5, true); },
                   {q, leaf({1, 2, 4, 3}, 5), leaf({1, 2, 4, 3}, 6)});
}

TEST(GradcheckAttention, PackedRows) {
  // Two groups (B=1, H=2): group 0 keeps positions {1, 3}, group 1 keeps {0}.
  Tensor offsets = from_vector<int64_t>({0, 2, 3}, {3});
  Tensor pos = from_vector<int64_t>({1, 3, 0}, {3});
  for (bool causal : {false, true}) {
    EXPECT_GRADCHECK(
        [&, causal](const Inputs& in) { return attention_packed(in[0], offsets, pos, in[1], in[2], 0.7, causal); },
        {leaf({3, 4}, 7), leaf({1, 2, 4, 4}, 8), leaf({1, 2, 4, 2}, 9)});
  }
}

TEST(GradcheckAttention, PackedRowsGroupedQuery) {
  // B=2, H=4 query heads on Hkv=2 K/V heads; group g = h * B + b; group 3 keeps no row.
  Tensor offsets = from_vector<int64_t>({0, 2, 3, 4, 4, 6, 7, 8, 10}, {9});
  Tensor pos = from_vector<int64_t>({1, 3, 0, 2, 0, 3, 1, 2, 0, 1}, {10});
  for (bool causal : {false, true}) {
    EXPECT_GRADCHECK(
        [&, causal](const Inputs& in) {
          return attention_packed(in[0], offsets, pos, in[1], in[2], 0.7, causal, /*heads=*/4);
        },
        {leaf({10, 4}, 14), leaf({2, 2, 4, 4}, 15), leaf({2, 2, 4, 2}, 16)});
  }
}

}  // namespace
}  // namespace moh::ag
