// CUDA vs CPU parity of upsample_nearest2d / avg_pool2d and their backward (scales 1-3; pooling
// 2/2, 3/2 and 4/4 ... with overlaps, gaps and floor-mode leftovers; planes from 1 x 1 to one that
// needs the grid-stride loop): float32 to 1e-6 and float64, both also bit for bit (both backends
// sum in double in the same order), bfloat16/float16 against the CPU float32 result of the same
// rounded inputs, non-contiguous inputs, and bitwise repeatability of the backward.
#include <string>
#include <vector>

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
const Pool kPools[] = {{2, 2}, {3, 2}, {3, 1}, {1, 2}, {2, 3}, {4, 4}};
const int64_t kScales[] = {1, 2, 3};
const std::vector<Shape> kShapes = {{2, 3, 7, 6}, {1, 1, 4, 4}, {3, 4, 16, 16}, {2, 5, 33, 17}};

struct HalfBound {
  DType dtype;
  double rtol, atol;
};
const HalfBound kHalf[] = {{DType::BFloat16, 1e-2, 1e-4}, {DType::Float16, 2e-3, 1e-5}};

// Every op of the family on x (CPU, float32 or float64) and on xg (its values on the GPU, in x's
// dtype or a 16-bit one); upstream gradients are random in xg's dtype, the CPU reference gets
// them in x's. GPU results are compared in x's dtype, by `check(got, want, what)`.
template <class Check>
void for_each_op(const Tensor& x, const Tensor& xg, const Check& check) {
  const DType dt = xg.dtype();
  const std::string of = " of " + describe(xg);
  auto ref = [&](const Tensor& t) { return t.to(x.dtype()); };
  auto back = [&](const Tensor& t) { return cpu(t).to(x.dtype()); };
  uint64_t seed = 1000;
  for (int64_t s : kScales) {
    const std::string what = "upsample_nearest2d scale " + std::to_string(s) + of;
    check(back(upsample_nearest2d(xg, s)), upsample_nearest2d(x, s), what);
    const Tensor g = rand_t({x.size(0), x.size(1), x.size(2) * s, x.size(3) * s}, seed++).to(dt);
    check(back(upsample_nearest2d_backward(gpu(g), s)), upsample_nearest2d_backward(ref(g), s), what + " backward");
  }
  for (const Pool& p : kPools) {
    if (p.kernel > x.size(2) || p.kernel > x.size(3)) continue;
    const std::string what =
        "avg_pool2d kernel " + std::to_string(p.kernel) + " stride " + std::to_string(p.stride) + of;
    const Tensor y = avg_pool2d(x, p.kernel, p.stride);
    check(back(avg_pool2d(xg, p.kernel, p.stride)), y, what);
    const Tensor g = rand_t(y.shape(), seed++).to(dt);
    check(back(avg_pool2d_backward(gpu(g), x.shape(), p.kernel, p.stride)),
          avg_pool2d_backward(ref(g), x.shape(), p.kernel, p.stride), what + " backward");
  }
}

auto within(double rtol, double atol) {
  return [=](const Tensor& got, const Tensor& want, const std::string& what) {
    test::expect_close(got, want, rtol, atol, what);
  };
}

TEST(CudaParityResample, Float32) {
  MOH_REQUIRE_GPU();
  for (const Shape& shape : kShapes) {
    const Tensor x = rand_t(shape, 1);
    for_each_op(x, gpu(x), within(1e-6, 1e-7));
  }
  // 8.4M input elements, a 33.5M-element output: more than one grid-stride pass.
  const Tensor big = rand_t({8, 64, 128, 128}, 2);
  test::expect_same_bytes(cpu(upsample_nearest2d(gpu(big), 2)), upsample_nearest2d(big, 2), "large upsample");
}

TEST(CudaParityResample, Float64) {
  MOH_REQUIRE_GPU();
  for (const Shape& shape : kShapes) {
    const Tensor x = rand_t(shape, 3, DType::Float64);
    for_each_op(x, gpu(x), within(1e-12, 1e-14));
  }
}

TEST(CudaParityResample, Float32AndFloat64MatchCpuBitForBit) {
  MOH_REQUIRE_GPU();
  auto same = [](const Tensor& got, const Tensor& want, const std::string& what) {
    test::expect_same_bytes(got, want, what);
  };
  for (DType dt : {DType::Float32, DType::Float64}) {
    const Tensor x = rand_t({2, 5, 33, 17}, 4, dt);
    for_each_op(x, gpu(x), same);
  }
}

TEST(CudaParityResample, NonContiguousInput) {
  MOH_REQUIRE_GPU();
  const Tensor nhwc = rand_t({2, 12, 10, 3}, 5);
  const Tensor x = nhwc.permute({0, 3, 1, 2});
  const Tensor xg = gpu(nhwc).permute({0, 3, 1, 2});
  ASSERT_FALSE(xg.is_contiguous());
  for_each_op(x.contiguous(), xg, within(1e-6, 1e-7));
  const Tensor sliced = gpu(rand_t({2, 3, 20, 19}, 6)).slice(2, 1, 20, 2);
  ASSERT_FALSE(sliced.is_contiguous());
  for_each_op(cpu(sliced), sliced, within(1e-6, 1e-7));
}

TEST(CudaParityResample, HalfTypes) {
  MOH_REQUIRE_GPU();
  for (const HalfBound& b : kHalf)
    for (const Shape& shape : {Shape{2, 3, 7, 6}, Shape{3, 4, 16, 16}}) {
      const Tensor xh = rand_t(shape, 7).to(b.dtype);
      EXPECT_EQ(avg_pool2d(gpu(xh), 2, 2).dtype(), b.dtype);
      EXPECT_EQ(upsample_nearest2d(gpu(xh), 2).dtype(), b.dtype);
      for_each_op(xh.to(DType::Float32), gpu(xh), within(b.rtol, b.atol));
    }
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
