// Finite-difference checks of softmax and log_softmax along the last and non-last dims, on
// contiguous and strided inputs.
#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;
using agt::transposed_leaf;
using Inputs = std::vector<Variable>;

TEST(GradcheckSoftmax, Softmax) {
  EXPECT_GRADCHECK([](const Inputs& in) { return softmax(in[0], -1); }, {leaf({3, 5}, 1, -2, 2)});
  EXPECT_GRADCHECK([](const Inputs& in) { return softmax(in[0], 0); }, {transposed_leaf({4, 3}, 2, -2, 2)});
  EXPECT_GRADCHECK([](const Inputs& in) { return softmax(in[0], 1); }, {leaf({2, 3, 2}, 3, -2, 2)});
}

TEST(GradcheckSoftmax, LogSoftmax) {
  EXPECT_GRADCHECK([](const Inputs& in) { return log_softmax(in[0], -1); },
                   {transposed_leaf({3, 5}, 4, -2, 2)});
  EXPECT_GRADCHECK([](const Inputs& in) { return log_softmax(in[0], 1); }, {leaf({2, 3, 2}, 5, -2, 2)});
}

}  // namespace
}  // namespace moh::ag
