// Finite-difference checks of the grouped row projections, with a token shared by two groups,
// an empty group and strided weight views (the way MoH slices fused weights).
#include "core/factory.h"
#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;
using Inputs = std::vector<Variable>;

TEST(GradcheckGroupedLinear, GatherLinear) {
  Tensor index = from_vector<int64_t>({0, 2, 2, 3}, {4});
  Tensor offsets = from_vector<int64_t>({0, 2, 2, 4}, {4});
  EXPECT_GRADCHECK(
      [&](const Inputs& in) {
        return gather_linear(in[0], index, offsets, view(narrow(in[1], 0, 1, 6), {3, 2, 3}), in[2]);
      },
      {leaf({4, 3}, 1), leaf({7, 3}, 2), leaf({3, 2}, 3)});
}

TEST(GradcheckGroupedLinear, ScatterLinear) {
  Tensor index = from_vector<int64_t>({1, 0, 1, 3}, {4});
  Tensor offsets = from_vector<int64_t>({0, 1, 4}, {3});
  EXPECT_GRADCHECK(
      [&](const Inputs& in) {
        Variable w = permute(view(in[1], {3, 2, 2}), {1, 0, 2});  // [G=2, Dout=3, Din=2] column blocks
        return scatter_linear(in[0], index, offsets, w, 5);
      },
      {leaf({4, 2}, 4), leaf({3, 4}, 5)});
}

}  // namespace
}  // namespace moh::ag
