// CUDA vs CPU parity of softmax / log_softmax (forward and backward, every dim, lines along the last
// dim of length 1, 33, 1000 and 5000 (warp and block rows) and along middle dims (strided lines),
// 0-d input) and of layer_norm / rms_norm (forward out, mean, rstd; backward grad_x, grad_weight,
// grad_bias; with and without affine parameters; rows of length 1 to 5000): float32 to 1e-5,
// float64, bfloat16/float16 against the CPU float32 result of the same rounded inputs,
// non-contiguous inputs, and bitwise reproducibility of the row-summed gradients.
#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "core/ops/checks.h"
#include "tests/core/cuda/parity.h"

namespace moh {
namespace {

using test::cpu;
using test::gpu;
using test::rand_t;

// The row-length cases: warp rows (1, 33, 1000), block rows (5000), a size-1 middle dim.
const std::vector<Shape> kShapes = {{7, 1}, {7, 33}, {4, 1000}, {3, 5000}, {2, 3, 40, 5}, {4, 1, 33}};

// Half types against float32: rtol of about two roundings of the type, atol for values near 0.
struct HalfBound {
  DType dtype;
  double rtol, atol;
};
const HalfBound kHalf[] = {{DType::BFloat16, 1e-2, 1e-4}, {DType::Float16, 2e-3, 1e-5}};

Tensor to_f32(const Tensor& t) { return cpu(t).to(DType::Float32); }

// ---------------------------------------------------------------------------- softmax

using SoftmaxFn = Tensor (*)(const Tensor&, int64_t);
using SoftmaxGradFn = Tensor (*)(const Tensor&, const Tensor&, int64_t);
struct SoftmaxPair {
  const char* name;
  SoftmaxFn forward;
  SoftmaxGradFn backward;
};
const SoftmaxPair kSoftmax[] = {{"softmax", &softmax, &softmax_backward},
                                {"log_softmax", &log_softmax, &log_softmax_backward}};

// Forward and backward over `dim` of x (CPU) on both devices, same dtype.
void check_softmax(const Tensor& x, int64_t dim, double rtol, double atol) {
  const Tensor g = rand_t(x.shape(), 99, x.dtype());
  for (const SoftmaxPair& f : kSoftmax) {
    const std::string what = std::string(f.name) + " dim " + std::to_string(dim) + " of " + describe(x);
    const Tensor y = f.forward(x, dim);
    test::expect_close(cpu(f.forward(gpu(x), dim)), y, rtol, atol, what);
    test::expect_close(cpu(f.backward(gpu(g), gpu(y), dim)), f.backward(g, y, dim), rtol, atol, what + " backward");
  }
}

TEST(CudaParitySoftmax, Float32EveryDim) {
  MOH_REQUIRE_GPU();
  for (const Shape& shape : kShapes)
    for (int64_t dim = -int64_t(shape.size()); dim < int64_t(shape.size()); ++dim)
      check_softmax(rand_t(shape, 1), dim, 1e-5, 1e-6);
  check_softmax(rand_t({}, 2), 0, 1e-5, 1e-6);  // 0-d: a one-element line
  check_softmax(mul(rand_t({3, 20}, 3), 30.0), -1, 1e-5, 1e-6);  // wide logits: the max shift matters
}

TEST(CudaParitySoftmax, Float64) {
  MOH_REQUIRE_GPU();
  for (const Shape& shape : kShapes)
    for (int64_t dim : {int64_t(0), int64_t(-1)}) check_softmax(rand_t(shape, 4, DType::Float64), dim, 1e-12, 1e-14);
}

// Inputs that are views on the GPU (the front end makes them contiguous before the kernel).
TEST(CudaParitySoftmax, NonContiguousInput) {
  MOH_REQUIRE_GPU();
  const Tensor x = rand_t({40, 33}, 5);
  const Tensor xg = gpu(x.t().contiguous()).t();
  ASSERT_FALSE(xg.is_contiguous());
  for (int64_t dim : {0, 1}) {
    test::expect_parity_f32(cpu(softmax(xg, dim)), softmax(x, dim), "softmax of a transposed view");
    test::expect_parity_f32(cpu(log_softmax(xg, dim)), log_softmax(x, dim), "log_softmax of a transposed view");
  }
}

TEST(CudaParitySoftmax, HalfTypes) {
  MOH_REQUIRE_GPU();
  for (const HalfBound& b : kHalf)
    for (const Shape& shape : {Shape{7, 33}, Shape{3, 5000}, Shape{2, 3, 40, 5}})
      for (int64_t dim : {int64_t(-1), int64_t(1)})
        for (const SoftmaxPair& f : kSoftmax) {
          const Tensor xh = rand_t(shape, 6).to(b.dtype), gh = rand_t(shape, 7).to(b.dtype);
          const std::string what = std::string(f.name) + " " + describe(xh);
          const Tensor yg = f.forward(gpu(xh), dim);
          EXPECT_EQ(yg.dtype(), b.dtype);
          test::expect_close(to_f32(yg), f.forward(xh.to(DType::Float32), dim), b.rtol, b.atol, what);
          // Backward from the GPU's own (rounded) forward output, the same values on both sides.
          const Tensor y32 = to_f32(yg);
          test::expect_close(to_f32(f.backward(gpu(gh), yg, dim)), f.backward(gh.to(DType::Float32), y32, dim), b.rtol,
                             b.atol, what + " backward");
        }
}

// ---------------------------------------------------------------------------- norms

struct NormCase {
  bool layer, weight, bias;
};
const NormCase kNorms[] = {{true, true, true}, {true, true, false}, {true, false, false}, {false, true, false},
                           {false, false, false}};

NormForward run_forward(const NormCase& c, const Tensor& x, const Tensor& w, const Tensor& b) {
  return c.layer ? layer_norm(x, c.weight ? w : Tensor(), c.bias ? b : Tensor(), 1e-5)
                 : rms_norm(x, c.weight ? w : Tensor(), 1e-5);
}
NormBackward run_backward(const NormCase& c, const Tensor& g, const Tensor& x, const NormForward& f,
                          const Tensor& w) {
  return c.layer ? layer_norm_backward(g, x, f, c.weight ? w : Tensor(), c.bias)
                 : rms_norm_backward(g, x, f, c.weight ? w : Tensor());
}

void expect_tensor(const Tensor& got, const Tensor& want, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(got.defined(), want.defined()) << what;
  if (want.defined()) test::expect_close(cpu(got).to(want.dtype()), want, rtol, atol, what);
}

// x (CPU) and xg (its values on the GPU, same dtype or 16-bit); params and grad_out random. The
// CPU reference runs on xg's values in x's dtype; each backward takes its own forward's saved
// statistics (float32 for 16-bit inputs).
void check_norm(const Tensor& x, const Tensor& xg, double rtol, double atol) {
  const int64_t d = x.size(-1);
  const DType dt = xg.dtype();
  const Tensor w = rand_t({d}, 8).to(dt), b = rand_t({d}, 9).to(dt), g = rand_t(x.shape(), 10).to(dt);
  auto ref = [&](const Tensor& t) { return t.to(x.dtype()); };
  for (const NormCase& c : kNorms) {
    const std::string what = std::string(c.layer ? "layer_norm" : "rms_norm") + (c.weight ? " weight" : "") +
                             (c.bias ? " bias" : "") + " of " + describe(xg);
    const NormForward fg = run_forward(c, xg, gpu(w), gpu(b)), fc = run_forward(c, x, ref(w), ref(b));
    expect_tensor(fg.out, fc.out, rtol, atol, what + " out");
    expect_tensor(fg.mean, fc.mean, rtol, atol, what + " mean");
    expect_tensor(fg.rstd, fc.rstd, rtol, atol, what + " rstd");
    EXPECT_EQ(fg.rstd.dtype(), statistic_dtype(dt)) << what;
    const NormBackward bg = run_backward(c, gpu(g), xg, fg, gpu(w)), bc = run_backward(c, ref(g), x, fc, ref(w));
    expect_tensor(bg.grad_x, bc.grad_x, rtol, atol, what + " grad_x");
    expect_tensor(bg.grad_weight, bc.grad_weight, rtol, atol * 10, what + " grad_weight");
    expect_tensor(bg.grad_bias, bc.grad_bias, rtol, atol * 10, what + " grad_bias");
  }
}

const std::vector<Shape> kNormShapes = {{6, 33}, {4, 1000}, {3, 5000}, {2, 3, 1}, {1, 7}, {300, 64}};

TEST(CudaParityNorm, Float32) {
  MOH_REQUIRE_GPU();
  for (const Shape& shape : kNormShapes) {
    const Tensor x = rand_t(shape, 11);
    check_norm(x, gpu(x), 1e-5, 1e-6);
  }
}

TEST(CudaParityNorm, Float64) {
  MOH_REQUIRE_GPU();
  for (const Shape& shape : kNormShapes) {
    const Tensor x = rand_t(shape, 12, DType::Float64);
    check_norm(x, gpu(x), 1e-10, 1e-12);
  }
}

TEST(CudaParityNorm, NonContiguousInput) {
  MOH_REQUIRE_GPU();
  const Tensor x = rand_t({33, 40}, 13);
  const Tensor xg = gpu(x.t().contiguous()).t();
  ASSERT_FALSE(xg.is_contiguous());
  check_norm(x, xg, 1e-5, 1e-6);
}

TEST(CudaParityNorm, HalfTypes) {
  MOH_REQUIRE_GPU();
  for (const HalfBound& b : kHalf)
    for (const Shape& shape : {Shape{64, 1000}, Shape{16, 5000}, Shape{5, 33}})
      for (double offset : {0.0, 50.0}) {  // rows around 50: a bfloat16 mean would be off by up to 0.2 std
        const Tensor xh = add(rand_t(shape, 14), offset).to(b.dtype);
        check_norm(xh.to(DType::Float32), gpu(xh), b.rtol, b.rtol);  // outputs are O(1): atol = rtol
      }
}

TEST(CudaParityNorm, BitwiseReproducible) {
  MOH_REQUIRE_GPU();
  const Tensor x = gpu(rand_t({4096, 96}, 15)), g = gpu(rand_t({4096, 96}, 16)), w = gpu(rand_t({96}, 17));
  const NormForward f = layer_norm(x, w, w, 1e-5);
  const NormBackward a = layer_norm_backward(g, x, f, w, true), b = layer_norm_backward(g, x, f, w, true);
  test::expect_same_bytes(cpu(a.grad_weight), cpu(b.grad_weight), "grad_weight");
  test::expect_same_bytes(cpu(a.grad_bias), cpu(b.grad_bias), "grad_bias");
  test::expect_same_bytes(cpu(a.grad_x), cpu(b.grad_x), "grad_x");
}

}  // namespace
}  // namespace moh
