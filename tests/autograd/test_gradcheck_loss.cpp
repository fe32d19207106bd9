// Finite-difference checks of cross_entropy: mean/sum/none reductions, label smoothing,
// ignore_index (mean divides by the kept count), strided logits.
#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;
using agt::transposed_leaf;
using Inputs = std::vector<Variable>;

const Tensor& targets() {
  static const Tensor t = from_vector<int64_t>({2, 0, 4, 4, 1}, {5});
  return t;
}

TEST(GradcheckLoss, CrossEntropyMeanSumNone) {
  for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None})
    EXPECT_GRADCHECK([r](const Inputs& in) { return cross_entropy(in[0], targets(), 0.0, -100, r); },
                     {leaf({5, 6}, 1, -2, 2)});
}

TEST(GradcheckLoss, CrossEntropyLabelSmoothing) {
  for (Reduction r : {Reduction::Mean, Reduction::None})
    EXPECT_GRADCHECK([r](const Inputs& in) { return cross_entropy(in[0], targets(), 0.1, -100, r); },
                     {transposed_leaf({5, 6}, 2, -2, 2)});
}

TEST(GradcheckLoss, CrossEntropyIgnoreIndex) {
  Tensor target = from_vector<int64_t>({2, -1, 4, -1, 1}, {5});
  for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None})
    EXPECT_GRADCHECK([&, r](const Inputs& in) { return cross_entropy(in[0], target, 0.2, -1, r); },
                     {leaf({5, 6}, 3, -2, 2)});
  // Ignored rows get exactly zero gradient.
  Variable logits = leaf({5, 6}, 4);
  backward(cross_entropy(logits, target, 0.2, -1));
  std::vector<double> g = agt::values(logits.grad());
  for (int64_t row : {1, 3})
    for (int64_t c = 0; c < 6; ++c) EXPECT_EQ(g[size_t(row * 6 + c)], 0.0);
}

}  // namespace
}  // namespace moh::ag
