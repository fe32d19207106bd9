// layer_norm / rms_norm: forward and saved statistics against double loops (with and without
// weight/bias, strided inputs, leading dims, the parallel path), backward against finite
// differences of the forward in float64, float32 against float64, thread-count determinism of
// grad_weight, empty inputs and every argument check.
#include <gtest/gtest.h>

#include <cmath>

#include "core/factory.h"
#include "core/ops.h"
#include "tests/core/nn_test_util.h"

namespace moh {
namespace {

using nn_test::expect_close;
using nn_test::randn;

struct NaiveNorm {
  std::vector<double> out, mean, rstd;
};

NaiveNorm naive_norm(const std::vector<double>& x, int64_t d, const std::vector<double>& w,
                     const std::vector<double>& b, double eps, bool centered) {
  const int64_t rows = int64_t(x.size()) / d;
  NaiveNorm n{std::vector<double>(x.size()), {}, {}};
  for (int64_t r = 0; r < rows; ++r) {
    double mu = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) mu += x[size_t(r * d + i)] / double(d);
    if (!centered) mu = 0;
    for (int64_t i = 0; i < d; ++i) var += (x[size_t(r * d + i)] - mu) * (x[size_t(r * d + i)] - mu) / double(d);
    const double rs = 1 / std::sqrt(var + eps);
    for (int64_t i = 0; i < d; ++i) {
      double v = (x[size_t(r * d + i)] - mu) * rs;
      if (!w.empty()) v *= w[size_t(i)];
      if (!b.empty()) v += b[size_t(i)];
      n.out[size_t(r * d + i)] = v;
    }
    n.mean.push_back(mu);
    n.rstd.push_back(rs);
  }
  return n;
}

std::vector<double> values(const Tensor& t) { return t.defined() ? t.to_vector<double>() : std::vector<double>{}; }

NormForward run_norm(bool centered, const Tensor& x, const Tensor& w, const Tensor& b, double eps) {
  return centered ? layer_norm(x, w, b, eps) : rms_norm(x, w, eps);
}

NormBackward run_backward(bool centered, const Tensor& g, const Tensor& x, const NormForward& f, const Tensor& w,
                          bool has_bias) {
  return centered ? layer_norm_backward(g, x, f, w, has_bias) : rms_norm_backward(g, x, f, w);
}

// rms_norm has no bias: `bias` is only used when centered.
void check_forward(bool centered, const Tensor& x, const Tensor& w, const Tensor& bias, double eps) {
  const Tensor b = centered ? bias : Tensor();
  const std::string what = std::string(centered ? "layer_norm " : "rms_norm ") + describe(x) +
                           (w.defined() ? " +weight" : "") + (b.defined() ? " +bias" : "");
  const double tol = x.dtype() == DType::Float32 ? 2e-6 : 1e-13;
  NormForward f = run_norm(centered, x, w, b, eps);
  const int64_t rows = x.numel() / x.size(-1);
  NaiveNorm n = naive_norm(x.to_vector<double>(), x.size(-1), values(w), values(b), eps, centered);
  ASSERT_EQ(f.out.shape(), x.shape());
  EXPECT_EQ(f.rstd.shape(), Shape{rows});
  expect_close(f.out, n.out, tol, what + " out");
  expect_close(f.rstd, n.rstd, tol, what + " rstd");
  if (centered) {
    EXPECT_EQ(f.mean.shape(), Shape{rows});
    expect_close(f.mean, n.mean, tol, what + " mean");
  } else {
    EXPECT_FALSE(f.mean.defined());
  }
}

TEST(Norm, ForwardMatchesNaive) {
  for (bool centered : {true, false})
    for (DType dt : {DType::Float32, DType::Float64}) {
      Tensor x = randn({2, 3, 7}, dt, 1, 2.0);
      Tensor w = randn({7}, dt, 2), b = randn({7}, dt, 3);
      check_forward(centered, x, Tensor(), Tensor(), 1e-5);
      check_forward(centered, x, w, Tensor(), 1e-5);
      check_forward(centered, x, w, b, 1e-3);
      check_forward(centered, x, Tensor(), b, 1e-5);
      check_forward(centered, randn({9}, dt, 4), w.narrow(0, 0, 1).expand({9}), Tensor(), 0.0);
      check_forward(centered, randn({5, 1}, dt, 5), Tensor(), Tensor(), 1e-5);  // D = 1
    }
}

TEST(Norm, StridedInputsAndParallelPath) {
  for (bool centered : {true, false}) {
    Tensor base = randn({6, 10}, DType::Float64, 6);
    Tensor w = randn({20}, DType::Float64, 7).slice(0, 0, 20, 2);
    check_forward(centered, base.t(), randn({6}, DType::Float64, 8), Tensor(), 1e-5);
    check_forward(centered, base.slice(1, 1, 10, 3).unsqueeze(0).expand({2, 6, 3}), Tensor(), Tensor(), 1e-5);
    check_forward(centered, base, w, w, 1e-5);
    check_forward(centered, randn({300, 257}, DType::Float32, 9, 3.0), randn({257}, DType::Float32, 10),
                  randn({257}, DType::Float32, 11), 1e-5);
  }
}

TEST(Norm, LargeOffsetIsStable) {
  // A row far from zero: two-pass variance in double keeps full precision.
  Tensor x = add(randn({4, 64}, DType::Float32, 12), 1000.0);
  check_forward(true, x, Tensor(), Tensor(), 1e-5);
}

// Backward of L = sum(g * out) against central differences in float64.
TEST(Norm, BackwardMatchesFiniteDifferences) {
  const Shape shape{3, 2, 5};
  const double eps = 1e-3;
  Tensor x = randn(shape, DType::Float64, 20, 1.5), g = randn(shape, DType::Float64, 21);
  Tensor w = randn({5}, DType::Float64, 22), b = randn({5}, DType::Float64, 23);
  const auto gv = g.to_vector<double>();
  for (bool centered : {true, false})
    for (bool affine : {true, false}) {
      const std::string what = std::string(centered ? "layer_norm" : "rms_norm") + (affine ? " affine" : "");
      Tensor wa = affine ? w : Tensor(), ba = affine && centered ? b : Tensor();
      auto loss = [&](const Tensor& xt, const Tensor& wt, const Tensor& bt) {
        return nn_test::dot(gv, run_norm(centered, xt, wt, bt, eps).out.to_vector<double>());
      };
      NormBackward gb = run_backward(centered, g, x, run_norm(centered, x, wa, ba, eps), wa, ba.defined());
      expect_close(gb.grad_x, nn_test::finite_diff([&](const std::vector<double>& v) {
                     return loss(from_vector<double>(v, shape), wa, ba);
                   }, x.to_vector<double>()), 1e-7, what + " grad_x");
      EXPECT_EQ(gb.grad_weight.defined(), affine) << what;
      EXPECT_EQ(gb.grad_bias.defined(), ba.defined()) << what;
      if (affine)
        expect_close(gb.grad_weight, nn_test::finite_diff([&](const std::vector<double>& v) {
                       return loss(x, from_vector<double>(v, {5}), ba);
                     }, w.to_vector<double>()), 1e-7, what + " grad_weight");
      if (ba.defined())
        expect_close(gb.grad_bias, nn_test::finite_diff([&](const std::vector<double>& v) {
                       return loss(x, wa, from_vector<double>(v, {5}));
                     }, b.to_vector<double>()), 1e-7, what + " grad_bias");
    }
  // grad_bias without a weight.
  NormBackward gb = layer_norm_backward(g, x, layer_norm(x, Tensor(), b, eps), Tensor(), true);
  EXPECT_FALSE(gb.grad_weight.defined());
  expect_close(gb.grad_bias, sum(g, {0, 1}).to_vector<double>(), 1e-14, "grad_bias only");
}

// float32 (large, parallel, strided grad) against the float64 kernel, and thread-count determinism.
TEST(Norm, Float32BackwardMatchesFloat64AndIsDeterministic) {
  const Shape shape{130, 300};
  Tensor x = randn(shape, DType::Float64, 30, 2.0), g = randn({300, 130}, DType::Float64, 31).t();
  Tensor w = randn({300}, DType::Float64, 32), b = randn({300}, DType::Float64, 33);
  for (bool centered : {true, false}) {
    Tensor ba = centered ? b : Tensor();
    NormBackward ref = run_backward(centered, g, x, run_norm(centered, x, w, ba, 1e-5), w, centered);
    Tensor x32 = x.to(DType::Float32), g32 = g.to(DType::Float32), w32 = w.to(DType::Float32);
    Tensor b32 = centered ? b.to(DType::Float32) : Tensor();
    NormForward f32 = run_norm(centered, x32, w32, b32, 1e-5);
    const int threads = num_threads();
    set_num_threads(1);
    NormBackward one = run_backward(centered, g32, x32, f32, w32, centered);
    set_num_threads(std::max(2, threads));
    NormBackward many = run_backward(centered, g32, x32, f32, w32, centered);
    set_num_threads(threads);
    expect_close(many.grad_x, ref.grad_x, 1e-5, "grad_x f32");
    expect_close(many.grad_weight, ref.grad_weight, 1e-5, "grad_weight f32");
    EXPECT_EQ(one.grad_weight.to_vector<float>(), many.grad_weight.to_vector<float>());
    EXPECT_EQ(one.grad_x.to_vector<float>(), many.grad_x.to_vector<float>());
    if (centered) {
      expect_close(many.grad_bias, ref.grad_bias, 1e-5, "grad_bias f32");
      EXPECT_EQ(one.grad_bias.to_vector<float>(), many.grad_bias.to_vector<float>());
    }
  }
}

TEST(Norm, EmptyRows) {
  Tensor x = zeros({0, 4}), w = ones({4}), b = zeros({4});
  NormForward f = layer_norm(x, w, b, 1e-5);
  EXPECT_EQ(f.out.shape(), (Shape{0, 4}));
  EXPECT_EQ(f.mean.shape(), Shape{0});
  NormBackward gb = layer_norm_backward(x, x, f, w, true);
  EXPECT_EQ(gb.grad_x.shape(), (Shape{0, 4}));
  EXPECT_EQ(gb.grad_weight.to_vector<float>(), std::vector<float>(4, 0.0f));
  EXPECT_EQ(gb.grad_bias.to_vector<float>(), std::vector<float>(4, 0.0f));
  EXPECT_EQ(rms_norm_backward(x, x, rms_norm(x, w, 1e-5), w).grad_weight.to_vector<float>(),
            std::vector<float>(4, 0.0f));
}

TEST(Norm, RejectsBadArguments) {
  Tensor x = randn({3, 4}, DType::Float32, 40), w = ones({4}), b = zeros({4});
  for (bool centered : {true, false}) {
    EXPECT_THROW(run_norm(centered, Tensor(), w, b, 1e-5), Error);
    EXPECT_THROW(run_norm(centered, arange(12).view({3, 4}), Tensor(), Tensor(), 1e-5), Error);
    EXPECT_THROW(run_norm(centered, scalar_tensor(1.0), Tensor(), Tensor(), 1e-5), Error);
    EXPECT_THROW(run_norm(centered, zeros({3, 0}), Tensor(), Tensor(), 1e-5), Error);
    EXPECT_THROW(run_norm(centered, x, ones({3}), Tensor(), 1e-5), Error);
    EXPECT_THROW(run_norm(centered, x, ones({1, 4}), Tensor(), 1e-5), Error);
    EXPECT_THROW(run_norm(centered, x, ones({4}, DType::Float64), Tensor(), 1e-5), Error);
    EXPECT_THROW(run_norm(centered, x, w, b, -1.0), Error);
    NormForward f = run_norm(centered, x, w, centered ? b : Tensor(), 1e-5);
    EXPECT_THROW(run_backward(centered, Tensor(), x, f, w, centered), Error);
    EXPECT_THROW(run_backward(centered, x.t(), x.t(), f, w, centered), Error);      // stats for other rows
    EXPECT_THROW(run_backward(centered, ones({3, 5}), x, f, w, centered), Error);   // grad_out shape
    EXPECT_THROW(run_backward(centered, x.to(DType::Float64), x, f, w, centered), Error);
    EXPECT_THROW(run_backward(centered, x, x, f, ones({5}), centered), Error);
    NormForward no_rstd = f;
    no_rstd.rstd = Tensor();
    EXPECT_THROW(run_backward(centered, x, x, no_rstd, w, centered), Error);
    NormForward bad_rstd = f;
    bad_rstd.rstd = f.rstd.to(DType::Float64);
    EXPECT_THROW(run_backward(centered, x, x, bad_rstd, w, centered), Error);
  }
  NormForward f = layer_norm(x, w, b, 1e-5);
  EXPECT_THROW(layer_norm(x, w, ones({5}), 1e-5), Error);
  f.mean = Tensor();
  EXPECT_THROW(layer_norm_backward(x, x, f, w, true), Error);
  try {
    layer_norm(x, ones({3}), Tensor(), 1e-5);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer_norm: expected weight of shape [4]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moh
