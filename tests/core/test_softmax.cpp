// softmax / log_softmax and their backward against double loops (every dim, both dtypes,
// strided, broadcast, 0-d, empty, extreme values, the parallel path), backward against finite
// differences of the forward in float64, and every argument check.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/factory.h"
#include "core/ops.h"
#include "tests/core/nn_test_util.h"

namespace moh {
namespace {

using nn_test::expect_close;
using nn_test::randn;

// Softmax (or log_softmax) along `dim` of values in logical order, in double.
std::vector<double> naive_softmax(const std::vector<double>& x, const Shape& shape, int64_t dim, bool log) {
  int64_t n = shape.empty() ? 1 : shape[size_t(dim)], inner = 1;
  for (size_t d = size_t(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t outer = n * inner == 0 ? 0 : int64_t(x.size()) / (n * inner);
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t i) { return size_t((o * n + i) * inner + j); };
      double m = -INFINITY, s = 0;
      for (int64_t i = 0; i < n; ++i) m = std::max(m, x[at(i)]);
      for (int64_t i = 0; i < n; ++i) s += std::exp(x[at(i)] - m);
      for (int64_t i = 0; i < n; ++i) y[at(i)] = log ? x[at(i)] - m - std::log(s) : std::exp(x[at(i)] - m) / s;
    }
  return y;
}

// d/dx of sum(g * f(x)) from the analytic formulas, in double.
std::vector<double> naive_backward(const std::vector<double>& g, const std::vector<double>& y, const Shape& shape,
                                   int64_t dim, bool log) {
  int64_t n = shape[size_t(dim)], inner = 1;
  for (size_t d = size_t(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t outer = int64_t(y.size()) / (n * inner);
  std::vector<double> gi(y.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t i) { return size_t((o * n + i) * inner + j); };
      double acc = 0;
      for (int64_t i = 0; i < n; ++i) acc += log ? g[at(i)] : g[at(i)] * y[at(i)];
      for (int64_t i = 0; i < n; ++i)
        gi[at(i)] = log ? g[at(i)] - std::exp(y[at(i)]) * acc : y[at(i)] * (g[at(i)] - acc);
    }
  return gi;
}

double tol_for(DType t) { return t == DType::Float32 ? 2e-6 : 1e-13; }

void check_forward_and_backward(const Tensor& x, int64_t dim, uint64_t seed) {
  const Shape& shape = x.shape();
  const int64_t d = dim < 0 ? dim + int64_t(shape.size()) : dim;
  const auto xv = x.to_vector<double>();
  for (bool log : {false, true}) {
    const std::string what = std::string(log ? "log_softmax" : "softmax") + " dim " + std::to_string(dim) + " " +
                             describe(x);
    Tensor y = log ? log_softmax(x, dim) : softmax(x, dim);
    ASSERT_EQ(y.shape(), shape);
    ASSERT_TRUE(y.is_contiguous());
    expect_close(y, naive_softmax(xv, shape, d, log), tol_for(x.dtype()), what);
    Tensor g = randn(shape, x.dtype(), seed + 1);
    Tensor gi = log ? log_softmax_backward(g, y, dim) : softmax_backward(g, y, dim);
    expect_close(gi, naive_backward(g.to_vector<double>(), y.to_vector<double>(), shape, d, log),
                 tol_for(x.dtype()) * 10, what + " backward");
  }
}

TEST(Softmax, MatchesNaiveAlongEveryDim) {
  for (DType dt : {DType::Float32, DType::Float64})
    for (int64_t dim : {0, 1, 2, -1, -3}) check_forward_and_backward(randn({3, 4, 5}, dt, 7, 3.0), dim, 11);
}

TEST(Softmax, ParallelPathLastAndMiddleDim) {
  // Big enough to cross the OpenMP threshold, with many and few lines.
  Tensor x = randn({96, 40, 33}, DType::Float32, 3, 2.0);
  check_forward_and_backward(x, -1, 5);
  check_forward_and_backward(x, 1, 6);
  check_forward_and_backward(randn({2, 70000}, DType::Float64, 4), 1, 8);
  // Lines too long to gather many at once (one strided line per block), and odd block tails.
  check_forward_and_backward(randn({40000, 3}, DType::Float32, 9), 0, 10);
  check_forward_and_backward(randn({3, 50, 37}, DType::Float64, 12), 1, 13);
}

TEST(Softmax, NonContiguousAndBroadcastInputs) {
  Tensor base = randn({6, 5, 4}, DType::Float64, 21);
  check_forward_and_backward(base.permute({2, 0, 1}), -1, 1);
  check_forward_and_backward(base.slice(1, 0, 5, 2), 1, 2);
  check_forward_and_backward(base.select(2, 1).t(), 0, 3);
  // A broadcast (stride-0) input: every entry along dim 0 is equal.
  Tensor row = randn({1, 5}, DType::Float32, 22).expand({4, 5});
  Tensor y = softmax(row, 0);
  for (float v : y.to_vector<float>()) EXPECT_FLOAT_EQ(v, 0.25f);
  check_forward_and_backward(row, 1, 4);
  // A non-contiguous grad_out gives the same result as its contiguous copy.
  Tensor x = randn({5, 7}, DType::Float64, 23);
  Tensor g = randn({7, 5}, DType::Float64, 24).t();
  Tensor out = softmax(x, 1);
  expect_close(softmax_backward(g, out, 1), softmax_backward(g.contiguous(), out, 1), 1e-15, "strided grad");
  expect_close(log_softmax_backward(g, log_softmax(x, 1).t().contiguous().t(), 1),
               log_softmax_backward(g.contiguous(), log_softmax(x, 1), 1), 1e-15, "strided out");
}

TEST(Softmax, StableForHugeAndInfiniteLogits) {
  Tensor x = from_vector<double>({1000, 1001, 999, -1000, 0, -INFINITY}, {2, 3});
  auto y = softmax(x.to(DType::Float32), 1).to_vector<double>();
  auto expect = naive_softmax(x.to_vector<double>(), {2, 3}, 1, false);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expect[i], 1e-7) << i;
  EXPECT_EQ(y[5], 0.0);
  auto ly = log_softmax(x, 1).to_vector<double>();
  EXPECT_NEAR(ly[1], -std::log(1 + std::exp(-1.0) + std::exp(-2.0)), 1e-14);
  EXPECT_NEAR(ly[3], -1000 - std::log1p(std::exp(-1000.0)), 1e-12);
  EXPECT_EQ(ly[5], -INFINITY);
  // NaN poisons its own line only (also on the strided path).
  Tensor nan_row = from_vector<float>({1, NAN, 2, 0, 1, 2}, {2, 3});
  for (bool log : {false, true}) {
    auto v = (log ? log_softmax(nan_row, 1) : softmax(nan_row, 1)).to_vector<float>();
    for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(v[i])) << i;
    for (size_t i = 3; i < 6; ++i) EXPECT_TRUE(std::isfinite(v[i])) << i;
    auto c = (log ? log_softmax(nan_row.t().contiguous(), 0) : softmax(nan_row.t().contiguous(), 0)).to_vector<float>();
    EXPECT_TRUE(std::isnan(c[2]) && std::isfinite(c[3])) << log;
  }
  // A row of only -inf has no distribution: NaN, as in PyTorch.
  Tensor dead = full({1, 3}, -INFINITY, DType::Float32);
  for (float v : softmax(dead, 1).to_vector<float>()) EXPECT_TRUE(std::isnan(v));
  for (float v : log_softmax(dead, 1).to_vector<float>()) EXPECT_TRUE(std::isnan(v));
}

TEST(Softmax, ZeroDimAndEmpty) {
  Tensor s = scalar_tensor(3.5, DType::Float64);
  EXPECT_EQ(softmax(s, 0).shape(), Shape{});
  EXPECT_EQ(softmax(s, -1).item<double>(), 1.0);
  EXPECT_EQ(log_softmax(s, 0).item<double>(), 0.0);
  EXPECT_EQ(softmax_backward(scalar_tensor(2.0, DType::Float64), softmax(s, 0), 0).item<double>(), 0.0);
  EXPECT_EQ(log_softmax_backward(scalar_tensor(2.0, DType::Float64), log_softmax(s, 0), 0).item<double>(), 0.0);
  for (const Shape& shape : {Shape{0, 3}, Shape{3, 0}, Shape{2, 0, 4}}) {
    Tensor e = zeros(shape);
    for (int64_t dim = 0; dim < int64_t(shape.size()); ++dim) {
      EXPECT_EQ(softmax(e, dim).shape(), shape);
      EXPECT_EQ(log_softmax_backward(e, e, dim).shape(), shape);
    }
  }
}

TEST(Softmax, BackwardMatchesFiniteDifferences) {
  const Shape shape{3, 4, 5};
  Tensor x = randn(shape, DType::Float64, 31, 2.0);
  Tensor g = randn(shape, DType::Float64, 32);
  const auto gv = g.to_vector<double>();
  for (int64_t dim : {0, 1, 2})
    for (bool log : {false, true}) {
      auto loss = [&](const std::vector<double>& xv) {
        Tensor xt = from_vector<double>(xv, shape);
        return nn_test::dot(gv, (log ? log_softmax(xt, dim) : softmax(xt, dim)).to_vector<double>());
      };
      Tensor y = log ? log_softmax(x, dim) : softmax(x, dim);
      Tensor gi = log ? log_softmax_backward(g, y, dim) : softmax_backward(g, y, dim);
      expect_close(gi, nn_test::finite_diff(loss, x.to_vector<double>()), 1e-7,
                   std::string(log ? "log_softmax" : "softmax") + " fd dim " + std::to_string(dim));
    }
}

TEST(Softmax, RejectsBadArguments) {
  Tensor x = randn({2, 3}, DType::Float32, 1);
  EXPECT_THROW(softmax(Tensor(), 0), Error);
  EXPECT_THROW(softmax(arange(6).view({2, 3}), 1), Error);
  EXPECT_THROW(log_softmax(x.to(DType::BFloat16), 1), Error);
  EXPECT_THROW(softmax(x, 2), Error);
  EXPECT_THROW(log_softmax(x, -3), Error);
  EXPECT_THROW(softmax(scalar_tensor(1.0), 1), Error);
  Tensor y = softmax(x, 1);
  EXPECT_THROW(softmax_backward(Tensor(), y, 1), Error);
  EXPECT_THROW(softmax_backward(x, Tensor(), 1), Error);
  EXPECT_THROW(softmax_backward(randn({3, 2}, DType::Float32, 2), y, 1), Error);
  EXPECT_THROW(softmax_backward(x.to(DType::Float64), y, 1), Error);
  EXPECT_THROW(log_softmax_backward(x, y.to(DType::Int64), 1), Error);
  EXPECT_THROW(log_softmax_backward(x, y, 2), Error);
  try {
    softmax(arange(6).view({2, 3}), 1);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("softmax"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("int64"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moh
