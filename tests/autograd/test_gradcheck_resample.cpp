// upsample_nearest2d and avg_pool2d composed (pool after upsample) on one tape, by finite differences
// in float64. Each op alone, on contiguous and strided leaves: the op table's Gradcheck driver
// (tests/core/test_op_table.cpp).
#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::transposed_leaf;
using Inputs = std::vector<Variable>;

TEST(GradcheckResample, PoolOfUpsampleOnOneTape) {
  EXPECT_GRADCHECK([](const Inputs& in) { return avg_pool2d(upsample_nearest2d(in[0], 3), 4, 2); },
                   {transposed_leaf({1, 2, 3, 5}, 7)});
}

}  // namespace
}  // namespace moh::ag
