// Finite-difference checks of layer_norm (affine, weight only, none) and rms_norm (with and
// without weight) on 2-D/3-D and strided inputs, including the parameter gradients.
#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;
using agt::transposed_leaf;
using Inputs = std::vector<Variable>;

TEST(GradcheckNorm, LayerNormAffine) {
  EXPECT_GRADCHECK([](const Inputs& in) { return layer_norm(in[0], in[1], in[2], 1e-5); },
                   {leaf({2, 3, 5}, 1), leaf({5}, 2, 0.5, 1.5), leaf({5}, 3)});
  EXPECT_GRADCHECK([](const Inputs& in) { return layer_norm(in[0], in[1], in[2], 1e-3); },
                   {transposed_leaf({4, 3}, 4), leaf({3}, 5, 0.5, 1.5), leaf({3}, 6)});
}

TEST(GradcheckNorm, LayerNormWeightOnly) {
  EXPECT_GRADCHECK([](const Inputs& in) { return layer_norm(in[0], in[1], Variable(), 1e-5); },
                   {leaf({3, 4}, 7), leaf({4}, 8, 0.5, 1.5)});
}

TEST(GradcheckNorm, LayerNormWithoutAffine) {
  EXPECT_GRADCHECK([](const Inputs& in) { return layer_norm(in[0], Variable(), Variable(), 1e-5); },
                   {transposed_leaf({3, 4}, 9)});
  // A fixed (non-trainable) weight: only x gets a gradient.
  Variable weight(leaf({4}, 10, 0.5, 1.5).data());
  EXPECT_GRADCHECK([&](const Inputs& in) { return layer_norm(in[0], weight, Variable(), 1e-5); },
                   {leaf({2, 4}, 11)});
}

TEST(GradcheckNorm, RmsNorm) {
  EXPECT_GRADCHECK([](const Inputs& in) { return rms_norm(in[0], in[1], 1e-6); },
                   {leaf({2, 3, 4}, 12), leaf({4}, 13, 0.5, 1.5)});
  EXPECT_GRADCHECK([](const Inputs& in) { return rms_norm(in[0], in[1], 1e-3); },
                   {transposed_leaf({5, 3}, 14), leaf({3}, 15, 0.5, 1.5)});
}

TEST(GradcheckNorm, RmsNormWithoutWeight) {
  EXPECT_GRADCHECK([](const Inputs& in) { return rms_norm(in[0], Variable(), 1e-6); }, {leaf({3, 4}, 16)});
}

}  // namespace
}  // namespace moh::ag
