// Finite-difference checks of matmul (2-D, transposed operands, batched input times a 2-D
// weight, 2-D times batched, broadcast batch dims, one operand without grad) and bmm.
#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;
using agt::transposed_leaf;
using Inputs = std::vector<Variable>;

Variable mm(const Inputs& in) { return matmul(in[0], in[1]); }

TEST(GradcheckMatmul, TwoDimensional) {
  EXPECT_GRADCHECK(mm, {leaf({3, 4}, 1), leaf({4, 2}, 2)});
  EXPECT_GRADCHECK(mm, {transposed_leaf({3, 4}, 3), transposed_leaf({4, 2}, 4)});
}

TEST(GradcheckMatmul, BatchedInputTimesWeight) {
  EXPECT_GRADCHECK(mm, {leaf({2, 3, 4}, 5), transposed_leaf({4, 5}, 6)});
  EXPECT_GRADCHECK(mm, {transposed_leaf({2, 3, 4}, 7), leaf({4, 2}, 8)});
}

TEST(GradcheckMatmul, MatrixTimesBatched) { EXPECT_GRADCHECK(mm, {leaf({3, 4}, 9), leaf({2, 4, 2}, 10)}); }

TEST(GradcheckMatmul, BroadcastBatchDims) {
  EXPECT_GRADCHECK(mm, {leaf({2, 1, 3, 2}, 11), leaf({3, 2, 2}, 12)});
}

TEST(GradcheckMatmul, OnlyOneOperandRequiresGrad) {
  Variable a(leaf({2, 3, 4}, 13).data()), b(leaf({4, 2}, 14).data());
  EXPECT_GRADCHECK([&](const Inputs& in) { return matmul(a, in[0]); }, {leaf({4, 2}, 15)});
  EXPECT_GRADCHECK([&](const Inputs& in) { return matmul(in[0], b); }, {leaf({2, 3, 4}, 16)});
}

TEST(GradcheckMatmul, Bmm) {
  EXPECT_GRADCHECK([](const Inputs& in) { return bmm(in[0], in[1]); },
                   {leaf({2, 3, 4}, 17), transposed_leaf({2, 4, 2}, 18)});
}

}  // namespace
}  // namespace moh::ag
