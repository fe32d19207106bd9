// Finite-difference checks of conv2d (input, weight and bias gradients; stride, padding, dilation,
// groups, pointwise, no bias, a strided input, a frozen weight) and of group_norm (affine or not,
// 4-D and 3-D inputs, one group and one group per channel).
#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;
using Inputs = std::vector<Variable>;

Conv2dParams params(int64_t stride, int64_t pad, int64_t dilation, int64_t groups) {
  return {stride, stride, pad, pad, dilation, dilation, groups};
}

TEST(GradcheckConv, Conv2dWithBias) {
  for (const Conv2dParams& p : {params(1, 1, 1, 1), params(2, 1, 1, 1), params(1, 2, 2, 1), params(1, 1, 1, 2)})
    EXPECT_GRADCHECK([p](const Inputs& in) { return conv2d(in[0], in[1], in[2], p); },
                     {leaf({2, 4, 5, 4}, 1), leaf({2, 4 / p.groups, 3, 3}, 2), leaf({2}, 3)});
}

TEST(GradcheckConv, Conv2dPointwiseAndUneven) {
  EXPECT_GRADCHECK([](const Inputs& in) { return conv2d(in[0], in[1], in[2], {}); },
                   {leaf({3, 3, 3, 2}, 4), leaf({2, 3, 1, 1}, 5), leaf({2}, 6)});
  const Conv2dParams uneven{2, 1, 0, 1, 1, 1, 1};
  EXPECT_GRADCHECK([uneven](const Inputs& in) { return conv2d(in[0], in[1], Variable(), uneven); },
                   {leaf({1, 2, 5, 4}, 7), leaf({3, 2, 2, 3}, 8)});
}

TEST(GradcheckConv, Conv2dStridedInputAndFrozenWeight) {
  Generator gen(9);
  Variable strided(uniform({1, 4, 5, 2}, -1.0, 1.0, gen, DType::Float64).permute({0, 3, 2, 1}), true);
  ASSERT_FALSE(strided.data().is_contiguous());
  EXPECT_GRADCHECK([](const Inputs& in) { return conv2d(in[0], in[1], in[2], params(1, 1, 1, 1)); },
                   {strided, leaf({3, 2, 3, 3}, 10), leaf({3}, 11)});
  Variable frozen(leaf({3, 2, 3, 3}, 12).data());
  EXPECT_GRADCHECK([&](const Inputs& in) { return conv2d(in[0], frozen, Variable(), params(1, 0, 1, 1)); },
                   {leaf({2, 2, 4, 4}, 13)});
}

TEST(GradcheckConv, GroupNorm) {
  EXPECT_GRADCHECK([](const Inputs& in) { return group_norm(in[0], 2, in[1], in[2], 1e-5); },
                   {leaf({2, 4, 3, 2}, 14), leaf({4}, 15, 0.5, 1.5), leaf({4}, 16)});
  EXPECT_GRADCHECK([](const Inputs& in) { return group_norm(in[0], 3, Variable(), Variable(), 1e-5); },
                   {leaf({2, 3, 5}, 17)});
  EXPECT_GRADCHECK([](const Inputs& in) { return group_norm(in[0], 1, in[1], in[2], 1e-3); },
                   {leaf({1, 3, 2, 2}, 18), leaf({3}, 19, 0.5, 1.5), leaf({3}, 20)});
}

}  // namespace
}  // namespace moh::ag
