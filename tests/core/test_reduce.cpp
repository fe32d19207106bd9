// Reductions (sum/mean/amax/amin/variance over dim sets, argmax, sum_to_shape) against naive double
// loops: every dim subset with and without keepdim, permuted/strided inputs, both kernel paths
// (reduced dim innermost or kept dim innermost) with and without range splitting, thread-count
// independence, float32 accuracy, ints, NaN, empty and 0-d tensors, and every argument check.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/factory.h"
#include "core/ops.h"

namespace moh {
namespace {

Tensor randu(const Shape& shape, DType dtype, uint64_t seed, double lo = -2, double hi = 2) {
  Generator gen(seed);
  return uniform(shape, lo, hi, gen, dtype);
}

enum class Kind { Sum, Mean, Max, Min, Var0, Var1, Argmax };

// Naive reduction of x over the dims flagged in `red`; returns values in keepdim layout.
std::vector<double> naive(const Tensor& x, const std::vector<bool>& red, Kind kind) {
  const Shape& s = x.shape();
  Shape keep(s);
  for (size_t d = 0; d < s.size(); ++d)
    if (red[d]) keep[d] = 1;
  auto ks = contiguous_strides(keep);
  auto xv = x.to_vector<double>();
  const size_t m = size_t(shape_numel(keep));
  // Output index of every element of x (logical order), by an odometer over x's shape.
  std::vector<size_t> oi(xv.size());
  std::vector<int64_t> idx(s.size(), 0);
  for (size_t i = 0; i < xv.size(); ++i) {
    size_t o = 0;
    for (size_t d = 0; d < s.size(); ++d) o += red[d] ? 0 : size_t(idx[d] * ks[d]);
    oi[i] = o;
    for (size_t d = s.size(); d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  auto out_index = [&](size_t i) { return oi[i]; };
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> acc(m, kind == Kind::Max || kind == Kind::Argmax ? -inf
                             : kind == Kind::Min                       ? inf
                                                                       : 0.0);
  std::vector<double> count(m, 0), best(m, -1), pos(m, 0);
  for (size_t i = 0; i < xv.size(); ++i) {
    size_t o = out_index(i);
    double v = xv[i];
    if (kind == Kind::Max)
      acc[o] = std::isnan(acc[o]) || std::isnan(v) ? NAN : std::max(acc[o], v);
    else if (kind == Kind::Min)
      acc[o] = std::isnan(acc[o]) || std::isnan(v) ? NAN : std::min(acc[o], v);
    else if (kind == Kind::Argmax) {
      if (best[o] < 0 || v > acc[o]) acc[o] = v, best[o] = pos[o];
      pos[o] += 1;
    } else
      acc[o] += v;
    count[o] += 1;
  }
  if (kind == Kind::Argmax) return best;
  if (kind == Kind::Mean || kind == Kind::Var0 || kind == Kind::Var1)
    for (size_t o = 0; o < m; ++o) acc[o] /= count[o];
  if (kind == Kind::Var0 || kind == Kind::Var1) {
    std::vector<double> sq(m, 0);
    for (size_t i = 0; i < xv.size(); ++i)
      sq[out_index(i)] += (xv[i] - acc[out_index(i)]) * (xv[i] - acc[out_index(i)]);
    for (size_t o = 0; o < m; ++o) sq[o] /= count[o] - (kind == Kind::Var1 ? 1 : 0);
    return sq;
  }
  return acc;
}

void expect_values(const Tensor& got, const std::vector<double>& want, double tol) {
  auto g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(g[i])) << "at " << i;
    else
      EXPECT_NEAR(g[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << "at " << i;
  }
}

Shape reduced_shape(const Shape& s, const std::vector<bool>& red, bool keepdim) {
  Shape out;
  for (size_t d = 0; d < s.size(); ++d) {
    if (!red[d])
      out.push_back(s[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

Tensor run(Kind kind, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  switch (kind) {
    case Kind::Sum: return sum(x, dims, keepdim);
    case Kind::Mean: return mean(x, dims, keepdim);
    case Kind::Max: return amax(x, dims, keepdim);
    case Kind::Min: return amin(x, dims, keepdim);
    case Kind::Var0: return variance(x, dims, 0, keepdim);
    case Kind::Var1: return variance(x, dims, 1, keepdim);
    case Kind::Argmax: return argmax(x, dims.at(0), keepdim);
  }
  return {};
}

// Checks `kind` over every non-empty subset of x's dims (dims given negative every other time).
void check_all_subsets(const Tensor& x, Kind kind, double tol) {
  const int64_t nd = x.dim();
  for (int mask = 1; mask < (1 << nd); ++mask) {
    std::vector<int64_t> dims;
    std::vector<bool> red(size_t(nd), false);
    for (int64_t d = 0; d < nd; ++d)
      if (mask & (1 << d)) {
        dims.push_back(mask % 2 ? d - nd : d);
        red[size_t(d)] = true;
      }
    for (bool keepdim : {false, true}) {
      SCOPED_TRACE("mask " + std::to_string(mask) + " keepdim " + std::to_string(keepdim));
      Tensor out = run(kind, x, dims, keepdim);
      EXPECT_EQ(out.shape(), reduced_shape(x.shape(), red, keepdim));
      EXPECT_EQ(out.dtype(), x.dtype());
      expect_values(out, naive(x, red, kind), tol);
    }
  }
  // Empty dims: all of them.
  Tensor all = run(kind, x, {}, false);
  EXPECT_EQ(all.shape(), Shape{});
  expect_values(all, naive(x, std::vector<bool>(size_t(nd), true), kind), tol);
}

TEST(Reduce, EveryDimSubsetMatchesNaive) {
  Tensor x = randu({3, 4, 5}, DType::Float64, 1);
  const std::vector<Tensor> inputs = {x, x.permute({2, 0, 1}), x.slice(2, 0, 5, 2),
                                      x.transpose(0, 1).slice(0, 1, 4)};
  for (Kind kind : {Kind::Sum, Kind::Mean, Kind::Max, Kind::Min, Kind::Var0, Kind::Var1}) {
    for (size_t k = 0; k < inputs.size(); ++k) {
      SCOPED_TRACE("kind " + std::to_string(int(kind)) + " input " + std::to_string(k));
      check_all_subsets(inputs[k], kind, 1e-13);
    }
  }
  Tensor f = randu({4, 3, 6}, DType::Float32, 2).permute({1, 2, 0});
  for (Kind kind : {Kind::Sum, Kind::Mean, Kind::Max, Kind::Min, Kind::Var1})
    check_all_subsets(f, kind, 1e-6);
}

TEST(Reduce, BothPathsWithAndWithoutSplitting) {
  // [B, D] with large B: reducing dim 0 runs across memory (kept dim innermost, split over B);
  // dim 1 is a per-row fold; {} is one long split fold; the transposes swap the two paths.
  Tensor x = randu({700, 120}, DType::Float64, 3);
  for (const Tensor& in : {x, x.t()}) {
    for (std::vector<int64_t> dims : std::vector<std::vector<int64_t>>{{0}, {1}, {0, 1}}) {
      std::vector<bool> red(2, false);
      for (int64_t d : dims) red[size_t(d)] = true;
      expect_values(sum(in, dims), naive(in, red, Kind::Sum), 1e-11);
      expect_values(amax(in, dims), naive(in, red, Kind::Max), 0);
      expect_values(amin(in, dims), naive(in, red, Kind::Min), 0);
    }
  }
  // Few long rows (path A split) and few long columns with a strided kept dim.
  Tensor rows = randu({3, 70000}, DType::Float64, 4);
  expect_values(sum(rows, {1}), naive(rows, {false, true}, Kind::Sum), 1e-11);
  Tensor cols = randu({30000, 6}, DType::Float64, 5).slice(1, 0, 6, 2);
  expect_values(mean(cols, {0}), naive(cols, {true, false}, Kind::Mean), 1e-12);
  // A middle dim reduced in a 3-d tensor, kept dims on both sides.
  Tensor m = randu({8, 300, 30}, DType::Float64, 6);
  expect_values(sum(m, {1}, true), naive(m, {false, true, false}, Kind::Sum), 1e-12);
  expect_values(sum(m.permute({2, 1, 0}), {0, 2}),
                naive(m.permute({2, 1, 0}), {true, false, true}, Kind::Sum), 1e-12);
}

TEST(Reduce, ResultsDoNotDependOnThreadCount) {
  Tensor x = randu({2000, 300}, DType::Float32, 7);
  const int saved = num_threads();
  std::vector<std::vector<float>> results[2];
  for (int t : {1, 2}) {
    set_num_threads(t);
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{}, {0}, {1}})
      results[t - 1].push_back(sum(x, dims).to_vector<float>());
    results[t - 1].push_back(sum(x.t(), {1}).to_vector<float>());
  }
  set_num_threads(saved);
  EXPECT_EQ(results[0], results[1]);
}

TEST(Reduce, Float32SumsAccumulateInDouble) {
  const int64_t n = 1000000;
  Tensor x = full({n}, 0.1, DType::Float32);
  const double exact = double(n) * double(0.1f);
  EXPECT_EQ(sum(x).item<float>(), float(exact));
  EXPECT_EQ(mean(x).item<float>(), 0.1f);
  EXPECT_EQ(sum(x.view({1000, 1000}), {0}).to_vector<float>()[17], float(1000 * double(0.1f)));
  // A float accumulator would be off by ~1e-3 relative here; double keeps the float rounding.
  Tensor r = randu({n}, DType::Float32, 8, 0, 1);
  double ref = 0;
  for (double v : r.to_vector<double>()) ref += v;
  EXPECT_NEAR(sum(r).item<float>(), ref, ref * 1e-7);
  EXPECT_NEAR(variance(r).item<float>(), 1.0 / 12, 1e-3);
}

TEST(Reduce, IntegerReductions) {
  for (DType dt : {DType::Int32, DType::Int64}) {
    Tensor x = randu({4, 5, 6}, DType::Float64, 9, -100, 100).to(dt).permute({1, 2, 0});
    check_all_subsets(x, Kind::Sum, 0);
    check_all_subsets(x, Kind::Max, 0);
    check_all_subsets(x, Kind::Min, 0);
    EXPECT_EQ(sum(x).dtype(), dt);
    for (int64_t d = 0; d < 3; ++d) {
      std::vector<bool> red(3, false);
      red[size_t(d)] = true;
      expect_values(argmax(x, d), naive(x, red, Kind::Argmax), 0);
    }
  }
  // int32 sums accumulate in int64: partial sums beyond int32 range still give the exact result.
  Tensor big = from_vector(std::vector<int32_t>{2000000000, 2000000000, -2000000000, -1999999999}, {4});
  EXPECT_EQ(sum(big).item<int32_t>(), 1);
}

TEST(Reduce, ArgmaxTiesNaNAndLayouts) {
  Tensor t = from_vector(std::vector<double>{1, 3, 3, 0, 2, 3, 2, 2}, {2, 4});
  EXPECT_EQ(argmax(t, 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(argmax(t, -1, true).shape(), (Shape{2, 1}));
  EXPECT_EQ(argmax(t, 0).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 1}));
  EXPECT_EQ(argmax(t, 0).dtype(), DType::Int64);
  Tensor inf = full({3}, -std::numeric_limits<double>::infinity(), DType::Float64);
  EXPECT_EQ(argmax(inf, 0).item<int64_t>(), 0);
  Tensor nan = from_vector(std::vector<double>{1, NAN, 5, NAN}, {4});
  EXPECT_EQ(argmax(nan, 0).item<int64_t>(), 1);
  EXPECT_TRUE(std::isnan(amax(nan).item<double>()));
  EXPECT_TRUE(std::isnan(amin(nan).item<double>()));

  Tensor x = randu({4, 5, 6}, DType::Float32, 10).permute({2, 0, 1});
  for (int64_t d = 0; d < 3; ++d) {
    std::vector<bool> red(3, false);
    red[size_t(d)] = true;
    expect_values(argmax(x, d), naive(x, red, Kind::Argmax), 0);
    EXPECT_EQ(argmax(x, d, true).shape(), reduced_shape(x.shape(), red, true));
  }
  // Long dims: path A split into chunks, and path B with several 1024-wide blocks; the maximum
  // appears twice, in different chunks, so the first index must win across chunks.
  Tensor rows = randu({2, 100000}, DType::Float64, 11, 0, 1);
  auto flag = [&](int64_t i) { return eq(arange(100000, DType::Int64), double(i)); };
  rows = where(logical_not(flag(70001)), rows, full({}, 5.0, DType::Float64));
  rows = where(logical_not(flag(40000)), rows, full({}, 5.0, DType::Float64));
  rows = where(logical_not(flag(90000)), rows, full({}, 5.0, DType::Float64));
  EXPECT_EQ(argmax(rows, 1).to_vector<int64_t>(), (std::vector<int64_t>{40000, 40000}));
  EXPECT_EQ(argmax(rows.t().contiguous(), 0).to_vector<int64_t>(), (std::vector<int64_t>{40000, 40000}));
  Tensor cols = randu({300, 2100}, DType::Float64, 12);
  expect_values(argmax(cols, 0), naive(cols, {true, false}, Kind::Argmax), 0);
  expect_values(argmax(cols.t(), 1), naive(cols.t(), {false, true}, Kind::Argmax), 0);
}

TEST(Reduce, VarianceCorrection) {
  Tensor x = from_vector(std::vector<double>{1, 2, 3, 4, 6, 8}, {2, 3});
  expect_values(variance(x, {1}), {1.0, 4.0}, 1e-15);
  expect_values(variance(x, {1}, 0), {2.0 / 3, 8.0 / 3}, 1e-15);
  expect_values(variance(x, {1}, 2), {2.0, 8.0}, 1e-15);
  EXPECT_EQ(variance(x, {0}, 1, true).shape(), (Shape{1, 3}));
  // Large offset: the two-pass form keeps full precision.
  Tensor shifted = add(x, 1e8);
  expect_values(variance(shifted, {1}), {1.0, 4.0}, 1e-9);
  // n - correction <= 0: inf or nan like PyTorch, not an error.
  EXPECT_TRUE(std::isnan(variance(from_vector(std::vector<double>{3}, {1})).item<double>()));
  EXPECT_THROW(variance(x, {1}, -1), Error);
}

TEST(Reduce, SumToShape) {
  Tensor g = randu({2, 3, 4}, DType::Float64, 13);
  const std::vector<Shape> targets = {{3, 1}, {4}, {1, 1, 4}, {}, {2, 1, 1}, {1, 3, 4}, {3, 4}, {1}};
  for (const Shape& target : targets) {
    SCOPED_TRACE(shape_str(target));
    Tensor r = sum_to_shape(g, target);
    EXPECT_EQ(r.shape(), target);
    // Reference: sum g over the positions that map to each element of the broadcast target.
    auto gv = g.to_vector<double>();
    std::vector<double> want(size_t(shape_numel(target)), 0);
    // Each element of g lands on the target position that broadcasts onto it.
    Tensor pos = arange(0.0, double(shape_numel(target)), 1.0, DType::Float64).view(target).expand(g.shape());
    auto pv = pos.to_vector<double>();
    for (size_t i = 0; i < gv.size(); ++i) want[size_t(pv[i])] += gv[i];
    expect_values(r, want, 1e-14);
  }
  EXPECT_TRUE(sum_to_shape(g, g.shape()).shares_storage(g));
  Tensor t = g.transpose(0, 2);  // [4, 3, 2]
  expect_values(sum_to_shape(t, {4, 1, 1}), sum(t, {1, 2}).to_vector<double>(), 1e-14);
  EXPECT_EQ(sum_to_shape(randu({1, 1, 5}, DType::Float32, 1), {5}).shape(), (Shape{5}));
  EXPECT_THROW(sum_to_shape(g, {3}), Error);           // 3 does not broadcast to 4
  EXPECT_THROW(sum_to_shape(g, {5, 2, 3, 4}), Error);  // more elements than x
  EXPECT_THROW(sum_to_shape(g, {2, 2, 4}), Error);
  EXPECT_THROW(sum_to_shape(Tensor(), {1}), Error);
}

TEST(Reduce, EmptyAndZeroDim) {
  Tensor e = zeros({0, 3}, DType::Float32);
  EXPECT_EQ(sum(e, {0}).shape(), (Shape{3}));
  EXPECT_EQ(sum(e, {0}).to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(sum(e).item<float>(), 0.0f);
  EXPECT_EQ(sum(e, {1}).shape(), (Shape{0}));
  EXPECT_EQ(amax(e, {1}).shape(), (Shape{0}));
  EXPECT_TRUE(std::isnan(mean(e, {0}).to_vector<float>()[0]));
  EXPECT_THROW(amax(e, {0}), Error);
  EXPECT_THROW(amin(e), Error);
  EXPECT_THROW(argmax(e, 0), Error);
  EXPECT_EQ(argmax(e, 1).shape(), (Shape{0}));

  Tensor s = full({}, 2.5, DType::Float64);
  EXPECT_EQ(sum(s).shape(), Shape{});
  EXPECT_EQ(sum(s).item<double>(), 2.5);
  EXPECT_EQ(sum(s, {0}).item<double>(), 2.5);
  EXPECT_EQ(amax(s, {-1}, true).shape(), Shape{});
  EXPECT_EQ(argmax(s, 0).item<int64_t>(), 0);
  EXPECT_THROW(sum(s, {1}), Error);
  // Size-1 dims only: a plain copy with the requested shape.
  Tensor one = randu({1, 1, 4}, DType::Float64, 14);
  expect_values(sum(one, {0, 1}), one.to_vector<double>(), 0);
  EXPECT_EQ(argmax(one, 1).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(Reduce, ArgumentErrors) {
  Tensor x = randu({2, 3}, DType::Float32, 15);
  Tensor i = randu({2, 3}, DType::Float64, 16, 0, 10).to(DType::Int32);
  EXPECT_THROW(sum(x, {2}), Error);
  EXPECT_THROW(sum(x, {-3}), Error);
  EXPECT_THROW(sum(x, {1, -1}), Error);  // the same dim twice
  EXPECT_THROW(mean(x, {0, 0}), Error);
  EXPECT_THROW(mean(i), Error);  // float only
  EXPECT_THROW(variance(i), Error);
  EXPECT_THROW(amax(gt(x, 0.0)), Error);  // bool
  EXPECT_THROW(sum(x.to(DType::BFloat16)), Error);
  EXPECT_THROW(sum(Tensor()), Error);
  EXPECT_THROW(argmax(x, 2), Error);
  EXPECT_THROW(argmax(x, -3), Error);
  EXPECT_THROW(argmax(Tensor(), 0), Error);
  try {
    sum(x, {5});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sum"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moh
