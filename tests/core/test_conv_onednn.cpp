// The oneDNN float32 convolution (core/cpu/conv_onednn.h) against the float64 im2col path on the
// geometries of tests/core/conv_cases.h and the autoencoder's layer shapes: forward and all three
// gradients; strided operands through the op; what depends on the thread count and what does not
// (core/cpu/conv.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cpu/conv_onednn.h"
#include "core/ops.h"
#include "tests/core/conv_cases.h"
#include "tests/core/nn_test_util.h"

namespace moh {
namespace {

using conv_test::ConvCase;
using conv_test::kCases;
using nn_test::expect_close;
using nn_test::randn;

struct Operands {
  Tensor x, w, b, g;  // input, weight, bias, output gradient
};
Operands operands(const ConvCase& k, uint64_t seed) {
  const ConvGeometry geo = conv_geometry({k.n, k.c, k.h, k.w}, {k.o, k.c / k.p.groups, k.kh, k.kw}, k.p);
  return {randn({k.n, k.c, k.h, k.w}, DType::Float32, seed),
          randn({k.o, k.c / k.p.groups, k.kh, k.kw}, DType::Float32, seed + 1, 0.5),
          randn({k.o}, DType::Float32, seed + 2), randn({k.n, k.o, geo.ho, geo.wo}, DType::Float32, seed + 3)};
}

// The autoencoder's layers (docs/conv.md's table) at batch 2, and a grouped one with a kernel wider
// than oneDNN's channel blocks.
const ConvCase kAutoencoderCases[] = {
    {"conv_in 1->64 3x3 @32", 2, 1, 32, 32, 64, 3, 3, {1, 1, 1, 1, 1, 1, 1}},
    {"res 64->64 3x3 @16", 2, 64, 16, 16, 64, 3, 3, {1, 1, 1, 1, 1, 1, 1}},
    {"down 64->64 3x3 s2 @16", 2, 64, 16, 16, 64, 3, 3, {2, 2, 0, 0, 1, 1, 1}},
    {"shortcut 64->128 1x1 @8", 2, 64, 8, 8, 128, 1, 1, {}},
    {"moments 128->8 3x3 @8", 2, 128, 8, 8, 8, 3, 3, {1, 1, 1, 1, 1, 1, 1}},
    {"groups 4, 32 channels", 3, 32, 9, 9, 32, 3, 3, {1, 1, 1, 1, 1, 1, 4}},
};

Tensor f64(const Tensor& t) { return t.to(DType::Float64); }

// oneDNN's results (called directly, so a silent fallback to im2col cannot pass) against the float64
// im2col op on the same values.
void check_against_float64(const ConvCase& k, uint64_t seed) {
  const std::string what = k.name;
  const Operands in = operands(k, seed);
  const Tensor want = conv2d(f64(in.x), f64(in.w), f64(in.b), k.p);
  const Conv2dBackward want_grads = conv2d_backward(f64(in.g), f64(in.x), f64(in.w), k.p);
  const Tensor out = Tensor::empty(want.shape(), DType::Float32, Device::cpu());
  ASSERT_TRUE(cpu::onednn_conv2d_forward(in.x, in.w, in.b, k.p, out)) << what << ": no oneDNN forward";
  expect_close(out, want, 1e-4, what + " out");
  const Tensor grad_input = Tensor::empty(in.x.shape(), DType::Float32, Device::cpu());
  ASSERT_TRUE(cpu::onednn_conv2d_backward_data(in.g, in.w, k.p, grad_input)) << what << ": no backward-data";
  expect_close(grad_input, want_grads.grad_input, 1e-4, what + " grad_input");
  const Tensor grad_weight = Tensor::empty(in.w.shape(), DType::Float32, Device::cpu());
  const Tensor grad_bias = Tensor::empty({k.o}, DType::Float32, Device::cpu());
  ASSERT_TRUE(cpu::onednn_conv2d_backward_weights(in.g, in.x, k.p, grad_weight, grad_bias))
      << what << ": no backward-weights";
  expect_close(grad_weight, want_grads.grad_weight, 1e-4, what + " grad_weight");
  expect_close(grad_bias, want_grads.grad_bias, 1e-4, what + " grad_bias");
  // Without the bias: a primitive of its own.
  ASSERT_TRUE(cpu::onednn_conv2d_forward(in.x, in.w, Tensor(), k.p, out)) << what;
  expect_close(out, conv2d(f64(in.x), f64(in.w), Tensor(), k.p), 1e-4, what + " out without bias");
  ASSERT_TRUE(cpu::onednn_conv2d_backward_weights(in.g, in.x, k.p, grad_weight, Tensor())) << what;
  expect_close(grad_weight, want_grads.grad_weight, 1e-4, what + " grad_weight without bias");
}

TEST(Conv2dOneDnn, MatchesFloat64Im2colOnTheConvTable) {
  uint64_t seed = 100;
  for (const ConvCase& k : kCases) check_against_float64(k, seed += 4);
}

TEST(Conv2dOneDnn, MatchesFloat64Im2colOnTheAutoencoderShapes) {
  uint64_t seed = 200;
  for (const ConvCase& k : kAutoencoderCases) check_against_float64(k, seed += 4);
}

struct ThreadRun {
  Tensor out;
  Conv2dBackward grads;
};
ThreadRun run_with_threads(int threads, const ConvCase& k, const Operands& in) {
  const int saved = num_threads();
  set_num_threads(threads);
  ThreadRun r{conv2d(in.x, in.w, in.b, k.p), conv2d_backward(in.g, in.x, in.w, k.p)};
  set_num_threads(saved);
  return r;
}

// oneDNN's forward and input gradient sum each element in one thread: the same bits for 1 and 2 threads.
TEST(Conv2dOneDnn, ForwardAndInputGradientHaveTheSameBitsForOneAndTwoThreads) {
  for (const ConvCase* table : {std::begin(kCases), std::begin(kAutoencoderCases)}) {
    const ConvCase* end = table == std::begin(kCases) ? std::end(kCases) : std::end(kAutoencoderCases);
    for (const ConvCase* k = table; k != end; ++k) {
      const Operands in = operands(*k, 300);
      const ThreadRun one = run_with_threads(1, *k, in), two = run_with_threads(2, *k, in);
      EXPECT_EQ(one.out.to_vector<float>(), two.out.to_vector<float>()) << k->name;
      EXPECT_EQ(one.grads.grad_input.to_vector<float>(), two.grads.grad_input.to_vector<float>()) << k->name;
    }
  }
}

// At one thread count every result, the weight and bias gradients included, repeats bit for bit.
TEST(Conv2dOneDnn, RepeatsBitForBitAtOneThreadCount) {
  for (const ConvCase& k : kAutoencoderCases) {
    const Operands in = operands(k, 400);
    const ThreadRun a = run_with_threads(2, k, in), b = run_with_threads(2, k, in);
    EXPECT_EQ(a.out.to_vector<float>(), b.out.to_vector<float>()) << k.name;
    EXPECT_EQ(a.grads.grad_input.to_vector<float>(), b.grads.grad_input.to_vector<float>()) << k.name;
    EXPECT_EQ(a.grads.grad_weight.to_vector<float>(), b.grads.grad_weight.to_vector<float>()) << k.name;
    EXPECT_EQ(a.grads.grad_bias.to_vector<float>(), b.grads.grad_bias.to_vector<float>()) << k.name;
  }
}

// The op hands oneDNN contiguous copies of strided float32 operands: the same bits as contiguous ones.
TEST(Conv2dOneDnn, StridedOperandsEqualTheirContiguousCopies) {
  const ConvCase& k = kAutoencoderCases[1];
  const Operands in = operands(k, 500);
  const Tensor x_view = in.x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  const Tensor w_view = in.w.permute({1, 0, 2, 3}).contiguous().permute({1, 0, 2, 3});
  const Tensor g_view = in.g.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  ASSERT_FALSE(x_view.is_contiguous() || w_view.is_contiguous() || g_view.is_contiguous());
  EXPECT_EQ(conv2d(x_view, w_view, in.b, k.p).to_vector<float>(), conv2d(in.x, in.w, in.b, k.p).to_vector<float>());
  const Conv2dBackward a = conv2d_backward(in.g, in.x, in.w, k.p), b = conv2d_backward(g_view, x_view, w_view, k.p);
  EXPECT_EQ(a.grad_input.to_vector<float>(), b.grad_input.to_vector<float>());
  EXPECT_EQ(a.grad_weight.to_vector<float>(), b.grad_weight.to_vector<float>());
  EXPECT_EQ(a.grad_bias.to_vector<float>(), b.grad_bias.to_vector<float>());
}

}  // namespace
}  // namespace moh
