// cross_entropy: loss, saved lse and gradient against double loops for every reduction, label
// smoothing and ignore_index, strided inputs, long rows (many online-softmax chunks), extreme and
// -inf logits, the parallel path; backward against finite differences in float64; empty and
// all-ignored batches; and every error, including the out-of-range target message.
#include <gtest/gtest.h>

#include <cmath>

#include "core/factory.h"
#include "core/ops.h"
#include "tests/core/nn_test_util.h"

namespace moh {
namespace {

using nn_test::expect_close;
using nn_test::randn;

struct NaiveCE {
  std::vector<double> loss, lse, grad;  // grad for a unit upstream gradient
};

NaiveCE naive_ce(const std::vector<double>& x, const std::vector<int64_t>& t, int64_t c, double ls, int64_t ignore,
                 Reduction red) {
  const int64_t n = int64_t(t.size());
  NaiveCE r{{}, std::vector<double>(size_t(n)), std::vector<double>(x.size(), 0.0)};
  std::vector<double> rows(size_t(n), 0.0);
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < c; ++j) m = std::max(m, x[size_t(i * c + j)]);
    for (int64_t j = 0; j < c; ++j) s += std::exp(x[size_t(i * c + j)] - m);
    const double lse = m + std::log(s);
    r.lse[size_t(i)] = lse;
    if (t[size_t(i)] == ignore) continue;
    ++count;
    double smooth = 0;
    for (int64_t j = 0; j < c; ++j) smooth += (lse - x[size_t(i * c + j)]) / double(c);
    const double nll = lse - x[size_t(i * c + t[size_t(i)])];
    rows[size_t(i)] = ls == 0 ? nll : (1 - ls) * nll + ls * smooth;  // no 0 * inf with masked logits
  }
  double total = 0;
  for (double v : rows) total += v;
  r.loss = red == Reduction::None ? rows : std::vector<double>{red == Reduction::Sum ? total : total / double(count)};
  for (int64_t i = 0; i < n; ++i) {
    if (t[size_t(i)] == ignore) continue;
    const double scale = red == Reduction::Mean ? 1.0 / double(count) : 1.0;
    for (int64_t j = 0; j < c; ++j)
      r.grad[size_t(i * c + j)] = scale * (std::exp(x[size_t(i * c + j)] - r.lse[size_t(i)]) -
                                           (j == t[size_t(i)] ? 1 - ls : 0.0) - ls / double(c));
  }
  return r;
}

Tensor targets(const std::vector<int64_t>& v) { return from_vector<int64_t>(v, {int64_t(v.size())}); }

std::vector<int64_t> random_targets(int64_t n, int64_t c, int64_t ignore, uint64_t seed) {
  Generator gen(seed);
  auto u = uniform({n}, 0.0, 1.0, gen, DType::Float64).to_vector<double>();
  std::vector<int64_t> t;
  for (int64_t i = 0; i < n; ++i) t.push_back(i % 5 == 3 ? ignore : std::min(c - 1, int64_t(u[size_t(i)] * c)));
  return t;
}

const char* name(Reduction r) { return r == Reduction::Mean ? "mean" : r == Reduction::Sum ? "sum" : "none"; }

void check_ce(const Tensor& logits, const std::vector<int64_t>& t, double ls, int64_t ignore, Reduction red,
              const Tensor& target_view = Tensor()) {
  const std::string what = std::string("ce ") + describe(logits) + " ls " + std::to_string(ls) + " " + name(red);
  const double tol = logits.dtype() == DType::Float32 ? 1e-5 : 1e-12;
  const int64_t c = logits.size(1);
  Tensor target = target_view.defined() ? target_view : targets(t);
  NaiveCE ref = naive_ce(logits.to_vector<double>(), t, c, ls, ignore, red);
  CrossEntropyForward f = cross_entropy(logits, target, ls, ignore, red);
  EXPECT_EQ(f.loss.shape(), red == Reduction::None ? Shape{logits.size(0)} : Shape{}) << what;
  expect_close(f.loss, ref.loss, tol, what + " loss");
  expect_close(f.lse, ref.lse, tol, what + " lse");
  // Upstream gradient 2.5 (per row 0.5 * (i + 1) for None).
  std::vector<double> up;
  for (int64_t i = 0; i < (red == Reduction::None ? logits.size(0) : 1); ++i)
    up.push_back(red == Reduction::None ? 0.5 * double(i + 1) : 2.5);
  Tensor g = from_vector<double>(up, f.loss.shape(), logits.dtype());
  std::vector<double> expect = ref.grad;
  for (size_t k = 0; k < expect.size(); ++k) expect[k] *= red == Reduction::None ? up[k / size_t(c)] : up[0];
  Tensor grad = cross_entropy_backward(g, logits, target, f.lse, ls, ignore, red);
  EXPECT_EQ(grad.shape(), logits.shape());
  // p - [target] cancels near p = 1: the error scales with the row's upstream factor, not the result.
  // x - lse loses ulp(lse) in the logits' dtype: the error grows with |lse|.
  double row_scale = red == Reduction::None ? up.back() : up[0], lse_scale = 1;
  for (double l : ref.lse) lse_scale = std::max(lse_scale, std::isfinite(l) ? std::abs(l) : 0.0);
  expect_close(grad, expect, tol, what + " grad", tol * row_scale * lse_scale);
}

TEST(CrossEntropy, MatchesNaiveForEveryReductionAndSmoothing) {
  for (DType dt : {DType::Float32, DType::Float64})
    for (double ls : {0.0, 0.1, 1.0})
      for (Reduction red : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
        check_ce(randn({11, 7}, dt, 1, 2.0), random_targets(11, 7, -100, 2), ls, -100, red);
        check_ce(randn({4, 1}, dt, 3), {0, -100, 0, 0}, ls, -100, red);  // C = 1
      }
}

TEST(CrossEntropy, CustomIgnoreIndexAndStridedInputs) {
  Tensor x = randn({6, 9}, DType::Float64, 4);
  // ignore_index may be a valid class: those rows drop out.
  check_ce(x, {2, 0, 2, 8, 1, 2}, 0.2, 2, Reduction::Mean);
  check_ce(x, {-1, 0, 3, -1, 1, 5}, 0.0, -1, Reduction::None);
  Tensor t_strided = targets({1, 7, 2, 7, 3, 7, 4, 7, 5, 7, 6, 7}).slice(0, 0, 12, 2);
  check_ce(randn({9, 6}, DType::Float32, 5).t(), {1, 2, 3, 4, 5, 6}, 0.1, -100, Reduction::Mean, t_strided);
  check_ce(randn({6, 18}, DType::Float64, 6).slice(1, 0, 18, 2), {0, 1, 2, 3, 4, 5}, 0.1, -100, Reduction::Sum);
}

TEST(CrossEntropy, LongRowsAndParallelPath) {
  // 1100 classes: several chunks, with the row maximum placed in a late chunk.
  Tensor x = randn({128, 1100}, DType::Float32, 7, 3.0);
  std::vector<float> peak(128 * 1100, 0.0f);
  for (int64_t i = 0; i < 128; i += 3) peak[size_t(i * 1100 + 1000 + i % 90)] = 40.0f;
  x = add(x, from_vector<float>(peak, {128, 1100}));
  for (Reduction red : {Reduction::Mean, Reduction::None})
    check_ce(x, random_targets(128, 1100, -100, 8), 0.1, -100, red);
  check_ce(x.to(DType::Float64), random_targets(128, 1100, -100, 9), 0.0, -100, Reduction::Sum);
}

TEST(CrossEntropy, ExtremeAndInfiniteLogits) {
  Tensor x = from_vector<double>({1e4, -1e4, 0, 3e3, 3e3 + 1, -5}, {2, 3});
  check_ce(x, {1, 0}, 0.0, -100, Reduction::None);
  check_ce(x.to(DType::Float32), {0, 2}, 0.3, -100, Reduction::Mean);
  // -inf logits (masked classes) are fine without smoothing, including a whole leading chunk.
  std::vector<double> v(2 * 300, 0.5);
  for (int64_t j = 0; j < 280; ++j) v[size_t(j)] = -INFINITY;
  v[299] = 2.0;
  v[300 + 7] = -INFINITY;
  Tensor masked = from_vector<double>(v, {2, 300});
  check_ce(masked, {299, 8}, 0.0, -100, Reduction::Sum);
  CrossEntropyForward f = cross_entropy(masked.to(DType::Float32), targets({290, 0}), 0.0, -100, Reduction::None);
  for (float l : f.loss.to_vector<float>()) EXPECT_TRUE(std::isfinite(l));
  // A NaN logit poisons its own row's loss only.
  Tensor nan_logits = from_vector<float>({0.5f, NAN, 1, 2, 0, 1}, {2, 3});
  auto nan_loss = cross_entropy(nan_logits, targets({0, 1}), 0.0, -100, Reduction::None).loss.to_vector<float>();
  EXPECT_TRUE(std::isnan(nan_loss[0]));
  EXPECT_TRUE(std::isfinite(nan_loss[1]));
  // ... while the target itself at -inf costs infinity.
  EXPECT_EQ(cross_entropy(masked, targets({0, 7}), 0.0, -100, Reduction::None).loss.to_vector<double>()[0], INFINITY);
}

TEST(CrossEntropy, BackwardMatchesFiniteDifferences) {
  const int64_t n = 6, c = 5;
  Tensor x = randn({n, c}, DType::Float64, 10, 2.0);
  const std::vector<int64_t> t{4, -100, 0, 2, 2, 1};
  for (double ls : {0.0, 0.25})
    for (Reduction red : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
      Tensor up = red == Reduction::None ? randn({n}, DType::Float64, 11) : scalar_tensor(0.7, DType::Float64);
      const auto upv = up.to_vector<double>();
      auto loss = [&](const std::vector<double>& xv) {
        return nn_test::dot(upv, cross_entropy(from_vector<double>(xv, {n, c}), targets(t), ls, -100, red)
                                     .loss.to_vector<double>());
      };
      CrossEntropyForward f = cross_entropy(x, targets(t), ls, -100, red);
      Tensor grad = cross_entropy_backward(up, x, targets(t), f.lse, ls, -100, red);
      expect_close(grad, nn_test::finite_diff(loss, x.to_vector<double>()), 1e-7,
                   std::string("ce fd ") + name(red) + " ls " + std::to_string(ls));
      for (int64_t j = 0; j < c; ++j) EXPECT_EQ(grad.select(0, 1).select(0, j).item<double>(), 0.0);
    }
}

TEST(CrossEntropy, EmptyAndAllIgnored) {
  Tensor x = randn({3, 4}, DType::Float32, 12);
  Tensor ignored = targets({-100, -100, -100});
  CrossEntropyForward mean = cross_entropy(x, ignored);
  EXPECT_TRUE(std::isnan(mean.loss.item<float>()));  // 0 / 0, as in PyTorch
  EXPECT_EQ(cross_entropy(x, ignored, 0.1, -100, Reduction::Sum).loss.item<float>(), 0.0f);
  Tensor grad = cross_entropy_backward(scalar_tensor(1.0), x, ignored, mean.lse);
  EXPECT_EQ(grad.to_vector<float>(), std::vector<float>(12, 0.0f));

  Tensor e = zeros({0, 4});
  Tensor no_target = zeros({0}, DType::Int64);
  EXPECT_TRUE(std::isnan(cross_entropy(e, no_target).loss.item<float>()));
  EXPECT_EQ(cross_entropy(e, no_target, 0.0, -100, Reduction::Sum).loss.item<float>(), 0.0f);
  CrossEntropyForward none = cross_entropy(e, no_target, 0.0, -100, Reduction::None);
  EXPECT_EQ(none.loss.shape(), Shape{0});
  EXPECT_EQ(none.lse.shape(), Shape{0});
  EXPECT_EQ(cross_entropy_backward(zeros({0}), e, no_target, none.lse, 0.0, -100, Reduction::None).shape(),
            (Shape{0, 4}));
}

TEST(CrossEntropy, RejectsBadArguments) {
  Tensor x = randn({3, 5}, DType::Float32, 13);
  Tensor t = targets({0, 4, 1});
  EXPECT_THROW(cross_entropy(Tensor(), t), Error);
  EXPECT_THROW(cross_entropy(x, Tensor()), Error);
  EXPECT_THROW(cross_entropy(arange(15).view({3, 5}), t), Error);
  EXPECT_THROW(cross_entropy(x.select(0, 0), t.select(0, 0)), Error);
  EXPECT_THROW(cross_entropy(x.unsqueeze(0), t), Error);
  EXPECT_THROW(cross_entropy(zeros({3, 0}), t), Error);
  EXPECT_THROW(cross_entropy(x, t.to(DType::Int32)), Error);
  EXPECT_THROW(cross_entropy(x, targets({0, 1})), Error);
  EXPECT_THROW(cross_entropy(x, t, -0.1), Error);
  EXPECT_THROW(cross_entropy(x, t, 1.5), Error);
  for (const auto& bad : {std::vector<int64_t>{0, 5, 1}, {0, 1, -1}, {-100, 2, -7}}) {
    EXPECT_THROW(cross_entropy(x, targets(bad)), Error);
    EXPECT_THROW(cross_entropy_backward(scalar_tensor(1.0), x, targets(bad), zeros({3})), Error);
  }
  EXPECT_THROW(cross_entropy(x, targets({0, 1, -100}), 0.0, 5), Error);  // -100 is a class index here
  try {
    cross_entropy(x, targets({0, 1, 9}));
    ADD_FAILURE() << "no error for target 9";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cross_entropy: target[2] = 9"), std::string::npos) << msg;
    EXPECT_NE(msg.find("5 classes"), std::string::npos) << msg;
  }
  CrossEntropyForward f = cross_entropy(x, t);
  EXPECT_THROW(cross_entropy_backward(Tensor(), x, t, f.lse), Error);
  EXPECT_THROW(cross_entropy_backward(ones({3}), x, t, f.lse), Error);  // Mean wants a 0-d grad
  EXPECT_THROW(cross_entropy_backward(scalar_tensor(1.0), x, t, f.lse, 0.0, -100, Reduction::None), Error);
  EXPECT_THROW(cross_entropy_backward(scalar_tensor(1.0, DType::Float64), x, t, f.lse), Error);
  EXPECT_THROW(cross_entropy_backward(scalar_tensor(1.0), x, t, Tensor()), Error);
  EXPECT_THROW(cross_entropy_backward(scalar_tensor(1.0), x, t, zeros({4})), Error);
  EXPECT_THROW(cross_entropy_backward(scalar_tensor(1.0), x, t, f.lse.to(DType::Float64)), Error);
  EXPECT_THROW(cross_entropy_backward(scalar_tensor(1.0), x, t, f.lse, 2.0), Error);
}

}  // namespace
}  // namespace moh
