// CUDA (cuDNN) specifics of conv2d and conv2d_backward against the CPU: TF32 within its rounding on
// the autoencoder's 64 -> 64 channel 3x3 convolution, an empty batch, the gradients asked for only,
// identical bits run to run in deterministic mode, argument errors on GPU tensors. Parity in every
// dtype over the geometries (strided, padded, dilated, grouped, depthwise, pointwise, with and
// without bias) and on strided operands: the op table's conv2d entry
// (tests/core/cuda/op_table_parity_test.cpp). Bounds scale with the summed terms (the op on |inputs|).
#include <gtest/gtest.h>

#include <string>

#include "core/factory.h"
#include "core/ops.h"
#include "tests/core/cuda/parity.h"

namespace moh {
namespace {

using test::cpu;
using test::expect_scaled;
using test::FlagsGuard;
using test::gpu;
using test::rand_t;

struct ParityCase {
  const char* name;
  Shape x, w;
  Conv2dParams p;
};

const ParityCase kAutoencoder = {"autoencoder 64 -> 64 at 32x32", {4, 64, 32, 32}, {64, 64, 3, 3}, {1, 1, 1, 1, 1, 1, 1}};

struct Results {
  Tensor out;
  Conv2dBackward grads;
};
Results run(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& g, const Conv2dParams& p) {
  return {conv2d(x, w, b, p), conv2d_backward(g, x, w, p)};
}

// The reference (float64 CPU op on the given values) and its scale (the op on |values|).
void check_case(const ParityCase& c, DType dtype, double rtol) {
  const std::string what = str_cat(c.name, " ", dtype_name(dtype));
  // Inputs rounded to dtype first, so the CPU reference sees exactly the GPU's values.
  const Tensor x = rand_t(c.x, 1, dtype), w = rand_t(c.w, 2, dtype), b = rand_t({c.w[0]}, 3, dtype);
  const Shape out_shape = conv2d(x.to(DType::Float64), w.to(DType::Float64), Tensor(), c.p).shape();
  const Tensor g = rand_t(out_shape, 4, dtype);
  auto f64 = [](const Tensor& t) { return t.to(DType::Float64); };
  const Results want = run(f64(x), f64(w), f64(b), f64(g), c.p);
  const Results scale = run(abs(f64(x)), abs(f64(w)), abs(f64(b)), abs(f64(g)), c.p);
  const Results got = run(gpu(x), gpu(w), gpu(b), gpu(g), c.p);
  EXPECT_EQ(got.out.dtype(), dtype) << what;
  const double atol = dtype == DType::Float64 ? 1e-12 : 1e-6;
  expect_scaled(got.out, want.out, scale.out, rtol, atol, what + " out");
  expect_scaled(got.grads.grad_input, want.grads.grad_input, scale.grads.grad_input, rtol, atol, what + " grad_input");
  expect_scaled(got.grads.grad_weight, want.grads.grad_weight, scale.grads.grad_weight, rtol, atol,
                what + " grad_weight");
  expect_scaled(got.grads.grad_bias, want.grads.grad_bias, scale.grads.grad_bias, rtol, atol, what + " grad_bias");
}

TEST(CudaParityConv, Tf32StaysWithinItsRounding) {
  MOH_REQUIRE_GPU();
  FlagsGuard flags;
  set_allow_tf32(true);
  check_case(kAutoencoder, DType::Float32, 2e-3);  // TF32 keeps 10 mantissa bits of each product's factors
}

TEST(CudaParityConv, ComputesOnlyTheGradientsAskedFor) {
  MOH_REQUIRE_GPU();
  FlagsGuard flags;
  set_allow_tf32(false);
  const Tensor x = rand_t({3, 5, 17, 12}, 5), w = rand_t({7, 5, 3, 3}, 6);
  const Conv2dParams p{2, 2, 1, 1, 1, 1, 1};
  const Tensor g = rand_t(conv2d(x, w, Tensor(), p).shape(), 7);
  const Conv2dBackward only_weight = conv2d_backward(gpu(g), gpu(x), gpu(w), p, {false, true, false});
  EXPECT_FALSE(only_weight.grad_input.defined());
  EXPECT_FALSE(only_weight.grad_bias.defined());
  test::expect_close(only_weight.grad_weight, conv2d_backward(g, x, w, p).grad_weight, 1e-4, 1e-4,
                     "weight gradient alone");
}

TEST(CudaParityConv, EmptyBatch) {
  MOH_REQUIRE_GPU();
  const Tensor x = gpu(zeros({0, 3, 6, 6}, DType::Float32)), w = gpu(rand_t({4, 3, 3, 3}, 8));
  const Tensor b = gpu(rand_t({4}, 9));
  EXPECT_EQ(conv2d(x, w, b, {}).shape(), Shape({0, 4, 4, 4}));
  const Conv2dBackward g = conv2d_backward(gpu(zeros({0, 4, 4, 4}, DType::Float32)), x, w, {});
  test::expect_equal(g.grad_weight, zeros({4, 3, 3, 3}, DType::Float32), "empty batch grad_weight");
  test::expect_equal(g.grad_bias, zeros({4}, DType::Float32), "empty batch grad_bias");
}

TEST(CudaParityConv, DeterministicModeGivesIdenticalBits) {
  MOH_REQUIRE_GPU();
  FlagsGuard flags;
  set_deterministic_algorithms(true);
  const ParityCase& c = kAutoencoder;
  const Tensor x = gpu(rand_t(c.x, 10)), w = gpu(rand_t(c.w, 11)), b = gpu(rand_t({c.w[0]}, 12));
  const Tensor g = gpu(rand_t(conv2d(x, w, b, c.p).shape(), 13));
  const Results first = run(x, w, b, g, c.p), second = run(x, w, b, g, c.p);
  test::expect_same_bytes(cpu(first.out), cpu(second.out), "forward twice");
  test::expect_same_bytes(cpu(first.grads.grad_input), cpu(second.grads.grad_input), "grad_input twice");
  test::expect_same_bytes(cpu(first.grads.grad_weight), cpu(second.grads.grad_weight), "grad_weight twice");
  test::expect_same_bytes(cpu(first.grads.grad_bias), cpu(second.grads.grad_bias), "grad_bias twice");
}

TEST(CudaParityConv, ErrorsMatchCpu) {
  MOH_REQUIRE_GPU();
  test::expect_error([] { conv2d(gpu(rand_t({2, 4, 6, 6}, 1)), gpu(rand_t({6, 3, 3, 3}, 2)), Tensor(), {}); },
                     {"conv2d", "expects 3 input channels"});
  test::expect_error([] { conv2d(gpu(rand_t({2, 4, 6, 6}, 1)), rand_t({6, 4, 3, 3}, 2), Tensor(), {}); },
                     {"conv2d", "must have the dtype and device of the input"});
}

}  // namespace
}  // namespace moh
