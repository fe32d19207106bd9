// CUDA specifics of upsample_nearest2d / avg_pool2d: an upsampling that needs several grid-stride
// passes, bitwise repeatability of the backward. Parity with the CPU (bit for bit in float32 and
// float64, bounded in the 16-bit types) over scales, pools with overlaps, gaps and floor-mode
// leftovers, and strided inputs: the op table's entries (tests/core/cuda/op_table_parity_test.cpp).
#include <string>

#include "core/factory.h"
#include "core/ops.h"
#include "tests/core/cuda/parity.h"

namespace moh {
namespace {

using test::cpu;
using test::gpu;
using test::rand_t;

struct Pool {
  int64_t kernel, stride;
};

TEST(CudaParityResample, LargeUpsampleTakesSeveralGridStridePasses) {
  MOH_REQUIRE_GPU();
  // 8.4M input elements, a 33.5M-element output: more than one grid-stride pass.
  const Tensor big = rand_t({8, 64, 128, 128}, 2);
  test::expect_same_bytes(cpu(upsample_nearest2d(gpu(big), 2)), upsample_nearest2d(big, 2), "large upsample");
}

TEST(CudaParityResample, BackwardBitwiseRepeatable) {
  MOH_REQUIRE_GPU();
  const Tensor g = gpu(rand_t({4, 16, 63, 63}, 8)), gu = gpu(rand_t({4, 16, 128, 128}, 9));
  const Shape in{4, 16, 128, 128};
  for (const Pool& p : {Pool{3, 2}, Pool{3, 1}}) {
    const Tensor gp = p.stride == 2 ? g : gpu(rand_t({4, 16, 126, 126}, 10));
    test::expect_same_bytes(cpu(avg_pool2d_backward(gp, in, p.kernel, p.stride)),
                            cpu(avg_pool2d_backward(gp, in, p.kernel, p.stride)),
                            "avg_pool2d_backward stride " + std::to_string(p.stride));
  }
  test::expect_same_bytes(cpu(upsample_nearest2d_backward(gu, 2)), cpu(upsample_nearest2d_backward(gu, 2)),
                          "upsample_nearest2d_backward");
}

}  // namespace
}  // namespace moh
