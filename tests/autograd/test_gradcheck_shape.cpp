// Finite-difference checks of the view functions, contiguous, and joining/splitting: cat and
// stack on non-last dims with an input that requires no grad, split/chunk with every output
// used (combined non-linearly) and with only some outputs used.
#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;
using agt::transposed_leaf;
using Inputs = std::vector<Variable>;

TEST(GradcheckShape, ReshapeViewFlatten) {
  EXPECT_GRADCHECK([](const Inputs& in) { return reshape(in[0], {2, -1}); }, {transposed_leaf({3, 4}, 1)});
  EXPECT_GRADCHECK([](const Inputs& in) { return view(in[0], {6, 2}); }, {leaf({3, 4}, 2)});
  EXPECT_GRADCHECK([](const Inputs& in) { return flatten(in[0], 1); }, {leaf({2, 3, 2}, 3)});
}

TEST(GradcheckShape, PermuteTranspose) {
  EXPECT_GRADCHECK([](const Inputs& in) { return permute(in[0], {2, 0, 1}); }, {leaf({2, 3, 4}, 4)});
  EXPECT_GRADCHECK([](const Inputs& in) { return permute(in[0], {-1, 0}); }, {transposed_leaf({3, 4}, 5)});
  EXPECT_GRADCHECK([](const Inputs& in) { return transpose(in[0], 0, -1); }, {leaf({2, 3, 4}, 6)});
}

TEST(GradcheckShape, NarrowSliceSelect) {
  EXPECT_GRADCHECK([](const Inputs& in) { return narrow(in[0], 0, 1, 2); }, {leaf({4, 3}, 7)});
  EXPECT_GRADCHECK([](const Inputs& in) { return slice(in[0], 1, 0, 5, 2); }, {transposed_leaf({3, 5}, 8)});
  EXPECT_GRADCHECK([](const Inputs& in) { return slice(in[0], -1, -3, 100); }, {leaf({2, 4}, 9)});
  EXPECT_GRADCHECK([](const Inputs& in) { return select(in[0], 1, -1); }, {leaf({2, 3, 2}, 10)});
  // Overlapping parts of one input add up.
  EXPECT_GRADCHECK([](const Inputs& in) { return narrow(in[0], 0, 0, 2) * narrow(in[0], 0, 1, 2); },
                   {leaf({3, 2}, 11)});
}

TEST(GradcheckShape, SqueezeUnsqueeze) {
  EXPECT_GRADCHECK([](const Inputs& in) { return squeeze(in[0], 1); }, {leaf({3, 1, 2}, 12)});
  EXPECT_GRADCHECK([](const Inputs& in) { return unsqueeze(in[0], -1); }, {transposed_leaf({2, 3}, 13)});
}

TEST(GradcheckShape, Expand) {
  EXPECT_GRADCHECK([](const Inputs& in) { return expand(in[0], {2, 3, 4}); }, {leaf({3, 1}, 14)});
  EXPECT_GRADCHECK([](const Inputs& in) { return expand(in[0], {3, -1}); }, {leaf({1, 4}, 15)});
}

TEST(GradcheckShape, Contiguous) {
  EXPECT_GRADCHECK([](const Inputs& in) { return contiguous(in[0]); }, {transposed_leaf({3, 4}, 16)});
  EXPECT_GRADCHECK([](const Inputs& in) { return contiguous(in[0]) * 2.0; }, {leaf({3}, 17)});
}

TEST(GradcheckShape, Cat) {
  Variable constant(leaf({2, 2}, 18).data());
  EXPECT_GRADCHECK(
      [&](const Inputs& in) {
        return cat({in[0], constant, in[1]}, 1);
      },
      {transposed_leaf({2, 3}, 19), leaf({2, 1}, 20)});
  EXPECT_GRADCHECK(
      [](const Inputs& in) {
        return cat({in[0], in[1], in[0]}, 0);
      },
      {leaf({1, 3}, 21), leaf({2, 3}, 22)});
}

TEST(GradcheckShape, Stack) {
  EXPECT_GRADCHECK(
      [](const Inputs& in) {
        return stack({in[0], in[1]}, 0);
      },
      {leaf({2, 3}, 23), transposed_leaf({2, 3}, 24)});
  EXPECT_GRADCHECK(
      [](const Inputs& in) {
        return stack({in[0], in[1], in[0]}, -1);
      },
      {leaf({2, 3}, 25), leaf({2, 3}, 26)});
}

TEST(GradcheckShape, SplitBySizeAndBySizes) {
  EXPECT_GRADCHECK(
      [](const Inputs& in) {
        std::vector<Variable> p = split(in[0], 2, 1);  // [3,2] [3,2] [3,1]
        return p[0] * p[1] + p[2];
      },
      {leaf({3, 5}, 27)});
  EXPECT_GRADCHECK(
      [](const Inputs& in) {
        std::vector<Variable> p = split(in[0], std::vector<int64_t>{1, 3}, 0);
        return exp(p[1]) * p[0];
      },
      {transposed_leaf({4, 2}, 28)});
}

TEST(GradcheckShape, ChunkWithSomeOutputsUnused) {
  EXPECT_GRADCHECK([](const Inputs& in) { return chunk(in[0], 3, -1)[1] * 2.0; }, {leaf({2, 6}, 29)});
  EXPECT_GRADCHECK(
      [](const Inputs& in) {
        std::vector<Variable> p = chunk(in[0], 2, 0);
        return tanh(p[0]) * p[1];
      },
      {leaf({4, 3}, 30)});
}

}  // namespace
}  // namespace moh::ag
