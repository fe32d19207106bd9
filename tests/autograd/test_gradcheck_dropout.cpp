// Finite-difference check of dropout with a fixed generator (reset inside the function, so
// every evaluation draws the same mask), and that the gradient is the saved mask / (1 - p).
#include <cmath>

#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;
using Inputs = std::vector<Variable>;

TEST(GradcheckDropout, FixedGenerator) {
  Generator gen;
  for (double p : {0.0, 0.3, 0.7}) {
    EXPECT_GRADCHECK(
        [&, p](const Inputs& in) {
          gen.set_state(42, 0);
          return dropout(in[0], p, gen);
        },
        {agt::transposed_leaf({4, 5}, 1)});
  }
}

TEST(GradcheckDropout, GradientIsTheForwardMaskScaled) {
  Generator gen(7);
  Variable x(ones({64}, DType::Float64), true);
  Variable y = dropout(x, 0.25, gen);
  std::vector<double> out = agt::values(y.data());
  backward(sum(y));
  std::vector<double> g = agt::values(x.grad());
  int kept = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_DOUBLE_EQ(g[i], out[i]);  // x = 1: out is mask / (1 - p), exactly the gradient
    EXPECT_TRUE(g[i] == 0.0 || std::abs(g[i] - 1.0 / 0.75) < 1e-15) << g[i];
    kept += g[i] != 0.0;
  }
  EXPECT_GT(kept, 32);
  EXPECT_LT(kept, 64);
}

}  // namespace
}  // namespace moh::ag
