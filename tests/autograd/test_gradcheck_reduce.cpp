// Finite-difference checks of the reductions over all dims, single and multiple dims (negative,
// non-last), with and without keepdim, on contiguous and strided inputs; amax ties.
#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;
using agt::transposed_leaf;
using Inputs = std::vector<Variable>;

TEST(GradcheckReduce, Sum) {
  EXPECT_GRADCHECK([](const Inputs& in) { return sum(in[0]); }, {transposed_leaf({3, 4}, 1)});
  EXPECT_GRADCHECK([](const Inputs& in) { return sum(in[0], {0}); }, {leaf({2, 3, 2}, 2)});
  EXPECT_GRADCHECK([](const Inputs& in) { return sum(in[0], {-1}, true); }, {transposed_leaf({3, 4}, 3)});
  EXPECT_GRADCHECK([](const Inputs& in) { return sum(in[0], {0, 2}); }, {leaf({2, 3, 2}, 4)});
  EXPECT_GRADCHECK([](const Inputs& in) { return sum(in[0]); }, {leaf({}, 15)});  // 0-d
}

TEST(GradcheckReduce, Mean) {
  EXPECT_GRADCHECK([](const Inputs& in) { return mean(in[0]); }, {leaf({3, 4}, 5)});
  EXPECT_GRADCHECK([](const Inputs& in) { return mean(in[0], {1}, true); }, {leaf({2, 3, 2}, 6)});
  EXPECT_GRADCHECK([](const Inputs& in) { return mean(in[0], {-1, 0}); }, {transposed_leaf({3, 4}, 7)});
}

TEST(GradcheckReduce, Amax) {
  EXPECT_GRADCHECK([](const Inputs& in) { return amax(in[0]); }, {leaf({3, 4}, 8)});
  EXPECT_GRADCHECK([](const Inputs& in) { return amax(in[0], {0}); }, {transposed_leaf({3, 4}, 9)});
  EXPECT_GRADCHECK([](const Inputs& in) { return amax(in[0], {-1}, true); }, {leaf({2, 3, 4}, 10)});
}

TEST(GradcheckReduce, AmaxSharesTheGradientAmongTies) {
  Variable x(from_vector<double>({1, 3, 3, 2, 5, 0}, {2, 3}), true);
  backward(sum(amax(x, {1})));
  EXPECT_EQ(agt::values(x.grad()), (std::vector<double>{0, 0.5, 0.5, 0, 1, 0}));
}

TEST(GradcheckReduce, Variance) {
  EXPECT_GRADCHECK([](const Inputs& in) { return variance(in[0]); }, {leaf({3, 4}, 11)});
  EXPECT_GRADCHECK([](const Inputs& in) { return variance(in[0], {0}, 0); }, {transposed_leaf({3, 4}, 12)});
  EXPECT_GRADCHECK([](const Inputs& in) { return variance(in[0], {-1}, 1, true); }, {leaf({2, 3, 4}, 13)});
  EXPECT_GRADCHECK([](const Inputs& in) { return variance(in[0], {0, 2}, 1); }, {leaf({2, 3, 4}, 14)});
}

}  // namespace
}  // namespace moh::ag
