// CUDA (cuDNN) vs CPU parity of conv2d and conv2d_backward: plain, strided, padded, dilated,
// grouped, depthwise and pointwise geometries with and without bias; float32 (TF32 off) and float64
// against the CPU op, bfloat16/float16 against the CPU float32 result of the same rounded inputs;
// non-contiguous operands; an empty batch; the gradients asked for only; identical bits run to run
// in deterministic mode; argument errors on GPU tensors.
// Results are bounded relative to the scale of their summed terms (the same op on |inputs|).
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

const ParityCase kCases[] = {
    {"3x3 same", {4, 8, 16, 16}, {16, 8, 3, 3}, {1, 1, 1, 1, 1, 1, 1}},
    {"stride 2", {3, 5, 17, 12}, {7, 5, 3, 3}, {2, 2, 1, 1, 1, 1, 1}},
    {"dilation 2, uneven padding", {2, 4, 15, 15}, {6, 4, 3, 3}, {1, 1, 2, 1, 2, 2, 1}},
    {"groups 4", {2, 8, 9, 9}, {12, 2, 3, 3}, {1, 1, 1, 1, 1, 1, 4}},
    {"depthwise", {2, 6, 8, 8}, {6, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 6}},
    {"pointwise", {8, 32, 8, 8}, {64, 32, 1, 1}, {}},
    {"autoencoder 64 -> 64 at 32x32", {4, 64, 32, 32}, {64, 64, 3, 3}, {1, 1, 1, 1, 1, 1, 1}},
};

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

TEST(CudaParityConv, Float32AndFloat64MatchTheCpu) {
  MOH_REQUIRE_GPU();
  FlagsGuard flags;
  set_allow_tf32(false);
  for (const ParityCase& c : kCases) {
    check_case(c, DType::Float32, 1e-5);
    check_case(c, DType::Float64, 1e-12);
  }
}

TEST(CudaParityConv, HalfTypesMatchTheCpuOnRoundedInputs) {
  MOH_REQUIRE_GPU();
  // Output rounding to the 16-bit type on top of float32 accumulation.
  for (const ParityCase& c : kCases) {
    check_case(c, DType::BFloat16, 1.6e-2);
    check_case(c, DType::Float16, 2e-3);
  }
}

TEST(CudaParityConv, Tf32StaysWithinItsRounding) {
  MOH_REQUIRE_GPU();
  FlagsGuard flags;
  set_allow_tf32(true);
  check_case(kCases[6], DType::Float32, 2e-3);  // TF32 keeps 10 mantissa bits of each product's factors
}

TEST(CudaParityConv, StridedOperandsAndNoBias) {
  MOH_REQUIRE_GPU();
  FlagsGuard flags;
  set_allow_tf32(false);
  const ParityCase& c = kCases[1];
  const Tensor x = rand_t(c.x, 5), w = rand_t(c.w, 6);
  const Tensor x_view = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  const Tensor want = conv2d(x, w, Tensor(), c.p);
  const Tensor got = conv2d(gpu(x_view), gpu(w), Tensor(), c.p);
  ASSERT_FALSE(gpu(x_view).is_contiguous());
  test::expect_close(got, want, 1e-5, 1e-5, "strided input without bias");
  const Tensor g = rand_t(want.shape(), 7);
  const Conv2dBackward only_weight = conv2d_backward(gpu(g), gpu(x_view), gpu(w), c.p, {false, true, false});
  EXPECT_FALSE(only_weight.grad_input.defined());
  EXPECT_FALSE(only_weight.grad_bias.defined());
  test::expect_close(only_weight.grad_weight, conv2d_backward(g, x, w, c.p).grad_weight, 1e-4, 1e-4,
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
  const ParityCase& c = kCases[6];
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
