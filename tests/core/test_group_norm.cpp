// The fused group_norm op (core/ops.h) against the composed definition it replaced (layer_norm
// without affine on the [N * groups, rest] view, then the per-channel weight and bias, through the
// tape): forward, statistics and all gradients, float64 and float32, with and without affine, a
// 2-D input and trailing dims of several sizes; a large common offset (the statistics' cancellation);
// identical bits for 1 and 2 threads; an empty batch; argument errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "core/ops.h"
#include "tests/core/nn_test_util.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using nn_test::expect_close;
using nn_test::randn;

struct Grads {
  Tensor out, grad_x, grad_weight, grad_bias;
};

// The composed reference through the tape.
Grads composed(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias, const Tensor& grad_out,
               double eps) {
  ag::Variable xv(x, true), wv = weight.defined() ? ag::Variable(weight, true) : ag::Variable(),
                            bv = bias.defined() ? ag::Variable(bias, true) : ag::Variable();
  Shape per_channel(x.dim(), 1);
  per_channel[1] = x.size(1);
  ag::Variable out = ag::reshape(
      ag::layer_norm(ag::reshape(xv, {x.size(0) * groups, -1}), ag::Variable(), ag::Variable(), eps), x.shape());
  if (wv.defined()) out = ag::mul(out, ag::reshape(wv, per_channel));
  if (bv.defined()) out = ag::add(out, ag::reshape(bv, per_channel));
  ag::backward(out, grad_out);
  return {out.data(), xv.grad(), wv.defined() ? wv.grad() : Tensor(), bv.defined() ? bv.grad() : Tensor()};
}

Grads fused(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias, const Tensor& grad_out,
            double eps) {
  const NormForward f = group_norm(x, groups, weight, bias, eps);
  const NormBackward b = group_norm_backward(grad_out, x, groups, f, weight, bias.defined());
  return {f.out, b.grad_x, b.grad_weight, b.grad_bias};
}

struct Case {
  Shape x;
  int64_t groups;
};
const Case kCases[] = {{{3, 6, 4, 5}, 2}, {{2, 6, 3, 3}, 3}, {{2, 6, 5}, 6},
                       {{4, 8}, 2},        {{1, 4, 7, 9}, 1}, {{2, 32, 4, 4}, 8}};

TEST(GroupNormOp, MatchesTheComposedDefinition) {
  for (DType dtype : {DType::Float64, DType::Float32}) {
    const double rtol = dtype == DType::Float64 ? 1e-10 : 2e-5;
    uint64_t seed = 1;
    for (const Case& k : kCases)
      for (bool affine : {true, false}) {
        const std::string what = str_cat(describe(Tensor::empty(k.x, dtype)), " groups ", k.groups,
                                         affine ? " affine" : " plain");
        const int64_t c = k.x[1];
        const Tensor x = randn(k.x, dtype, seed += 5, 2.0);
        const Tensor w = affine ? randn({c}, dtype, seed + 1) : Tensor();
        const Tensor b = affine ? randn({c}, dtype, seed + 2) : Tensor();
        const Tensor g = randn(k.x, dtype, seed + 3);
        const Grads want = composed(x, k.groups, w, b, g, 1e-5), got = fused(x, k.groups, w, b, g, 1e-5);
        expect_close(got.out, want.out, rtol, what + " out");
        expect_close(got.grad_x, want.grad_x, rtol, what + " grad_x", rtol);
        EXPECT_EQ(got.grad_weight.defined(), affine) << what;
        EXPECT_EQ(got.grad_bias.defined(), affine) << what;
        if (!affine) continue;
        expect_close(got.grad_weight, want.grad_weight, rtol, what + " grad_weight");
        expect_close(got.grad_bias, want.grad_bias, rtol, what + " grad_bias");
      }
  }
}

TEST(GroupNormOp, StatisticsSurviveALargeCommonOffset) {
  // Values 1e4 + N(0, 1e-2): a plain sum of squares in float32 would lose the variance entirely.
  const Tensor noise = randn({2, 4, 8, 8}, DType::Float64, 40, 1e-2);
  const Tensor x = add(noise, 1e4);
  const NormForward want = layer_norm(noise.reshape({4, -1}), Tensor(), Tensor(), 1e-8);
  const NormForward got = group_norm(x, 2, Tensor(), Tensor(), 1e-8);
  expect_close(got.out, want.out.reshape(x.shape()), 1e-8, "out");
  expect_close(got.rstd, want.rstd, 1e-8, "rstd");
  const NormForward got32 = group_norm(x.to(DType::Float32), 2, Tensor(), Tensor(), 1e-8);
  // float32 inputs round 1e4 + noise to about 1e-3: compare with the float64 op on those rounded values.
  const NormForward want32 = group_norm(x.to(DType::Float32).to(DType::Float64), 2, Tensor(), Tensor(), 1e-8);
  expect_close(got32.rstd, want32.rstd, 1e-5, "float32 rstd");
}

TEST(GroupNormOp, HasTheSameBitsForOneAndTwoThreads) {
  // 4 * 64 * 16 * 16 values: above the parallel threshold.
  const Tensor x = randn({4, 64, 16, 16}, DType::Float32, 50), w = randn({64}, DType::Float32, 51),
               b = randn({64}, DType::Float32, 52), g = randn({4, 64, 16, 16}, DType::Float32, 53);
  const int threads = num_threads();
  set_num_threads(1);
  const Grads one = fused(x, 32, w, b, g, 1e-6);
  set_num_threads(2);
  const Grads two = fused(x, 32, w, b, g, 1e-6);
  set_num_threads(threads);
  EXPECT_EQ(one.out.to_vector<float>(), two.out.to_vector<float>());
  EXPECT_EQ(one.grad_x.to_vector<float>(), two.grad_x.to_vector<float>());
  EXPECT_EQ(one.grad_weight.to_vector<float>(), two.grad_weight.to_vector<float>());
  EXPECT_EQ(one.grad_bias.to_vector<float>(), two.grad_bias.to_vector<float>());
}

TEST(GroupNormOp, EmptyBatchGivesZeroParameterGradients) {
  const Tensor x = Tensor::empty({0, 4, 3, 3}, DType::Float32), w = randn({4}, DType::Float32, 60);
  const NormForward f = group_norm(x, 2, w, w, 1e-5);
  EXPECT_EQ(f.out.shape(), x.shape());
  EXPECT_EQ(f.mean.shape(), Shape{0});
  const NormBackward b = group_norm_backward(x, x, 2, f, w, true);
  EXPECT_EQ(b.grad_weight.to_vector<float>(), std::vector<float>(4, 0.0f));
  EXPECT_EQ(b.grad_bias.to_vector<float>(), std::vector<float>(4, 0.0f));
}

TEST(GroupNormOp, RejectsBadArgumentsNamingThem) {
  const Tensor x = randn({2, 6, 3, 3}, DType::Float32, 70), w = randn({6}, DType::Float32, 71);
  test::expect_error([&] { group_norm(randn({6}, DType::Float32, 1), 2, w, w, 1e-5); },
                     {"group_norm", "expected the input as [N, C, ...]"});
  test::expect_error([&] { group_norm(x, 4, w, w, 1e-5); }, {"group_norm", "groups 4 must divide the 6 channels"});
  test::expect_error([&] { group_norm(x, 2, w.to(DType::Float64), w, 1e-5); },
                     {"group_norm", "must have the dtype and device of the input"});
  test::expect_error([&] { group_norm(Tensor::empty({2, 6, 0}, DType::Float32), 2, w, w, 1e-5); },
                     {"group_norm", "expected non-empty channel groups"});
  test::expect_error([&] { group_norm(x, 2, w, w, -1.0); }, {"group_norm", "eps must be >= 0"});
  const NormForward f = group_norm(x, 2, w, w, 1e-5);
  test::expect_error([&] { group_norm_backward(x, x, 3, f, w, true); },
                     {"group_norm_backward", "expected saved mean of shape [6]"});
  test::expect_error([&] { group_norm_backward(x.reshape({2, 6, 9}), x, 2, f, w, true); },
                     {"group_norm_backward", "must match the input"});
}

}  // namespace
}  // namespace moh
