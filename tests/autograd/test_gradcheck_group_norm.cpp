// Finite-difference checks of the fused group_norm (ag::group_norm) beyond test_gradcheck_conv.cpp's
// 4-D affine and plain cases: weight only, bias only, a 2-D [N, C] strided input, 3-D input, one
// channel per group.
#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;
using agt::transposed_leaf;
using Inputs = std::vector<Variable>;

TEST(GradcheckGroupNorm, WeightOnlyOnThreeDims) {
  EXPECT_GRADCHECK([](const Inputs& in) { return group_norm(in[0], 2, in[1], Variable(), 1e-5); },
                   {leaf({3, 4, 5}, 1), leaf({4}, 2, 0.5, 1.5)});
}

TEST(GradcheckGroupNorm, BiasOnlyOnAStridedTwoDimInput) {
  EXPECT_GRADCHECK([](const Inputs& in) { return group_norm(in[0], 3, Variable(), in[1], 1e-5); },
                   {transposed_leaf({4, 6}, 3), leaf({6}, 4)});
}

TEST(GradcheckGroupNorm, OneChannelPerGroupAffine) {
  EXPECT_GRADCHECK([](const Inputs& in) { return group_norm(in[0], 4, in[1], in[2], 1e-3); },
                   {leaf({2, 4, 2, 3}, 5), leaf({4}, 6, 0.5, 1.5), leaf({4}, 7)});
}

}  // namespace
}  // namespace moh::ag
