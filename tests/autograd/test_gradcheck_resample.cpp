// Finite-difference checks of upsample_nearest2d (scale 1, 2, 3) and avg_pool2d (2/2, 3/2
// overlapping, 3/1, 1/2 with gaps, floor-mode leftovers) in float64, on odd sizes, contiguous and
// strided (transposed H/W, permuted NHWC) inputs, and composed (pool after upsample) on one tape.
#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;
using agt::transposed_leaf;
using Inputs = std::vector<Variable>;

// A float64 leaf of NCHW `shape` whose memory is laid out NHWC (a permuted, non-contiguous view).
Variable nhwc_leaf(const Shape& shape, uint64_t seed) {
  Variable v(leaf({shape[0], shape[2], shape[3], shape[1]}, seed).data().permute({0, 3, 1, 2}), true);
  EXPECT_FALSE(v.data().is_contiguous());
  return v;
}

TEST(GradcheckResample, UpsampleNearest) {
  for (int64_t scale : {1, 2, 3}) {
    auto f = [scale](const Inputs& in) { return upsample_nearest2d(in[0], scale); };
    EXPECT_GRADCHECK(f, {leaf({2, 3, 3, 5}, 1)});
    EXPECT_GRADCHECK(f, {transposed_leaf({1, 2, 5, 3}, 2)});
    EXPECT_GRADCHECK(f, {nhwc_leaf({2, 3, 3, 1}, 3)});
  }
}

TEST(GradcheckResample, AvgPool) {
  struct Pool {
    int64_t kernel, stride;
  };
  for (const Pool p : {Pool{2, 2}, Pool{3, 2}, Pool{3, 1}, Pool{1, 2}, Pool{2, 3}}) {
    auto f = [p](const Inputs& in) { return avg_pool2d(in[0], p.kernel, p.stride); };
    EXPECT_GRADCHECK(f, {leaf({2, 2, 5, 7}, 4)});
    EXPECT_GRADCHECK(f, {transposed_leaf({1, 2, 7, 5}, 5)});
    EXPECT_GRADCHECK(f, {nhwc_leaf({1, 3, 5, 3}, 6)});
  }
}

TEST(GradcheckResample, PoolOfUpsampleOnOneTape) {
  EXPECT_GRADCHECK([](const Inputs& in) { return avg_pool2d(upsample_nearest2d(in[0], 3), 4, 2); },
                   {transposed_leaf({1, 2, 3, 5}, 7)});
}

}  // namespace
}  // namespace moh::ag
