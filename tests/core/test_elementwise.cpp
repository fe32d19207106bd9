// Elementwise ops (binary, scalar, comparisons, unary, activations and fused backwards, clamp,
// where, masked_fill, in-place) against naive double loops over the broadcast operands, on
// contiguous, transposed, strided and broadcast inputs, plus every argument check.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "core/factory.h"
#include "core/ops.h"

namespace moh {
namespace {

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;
using RefFn = std::function<double(double, double)>;

Tensor randu(const Shape& shape, DType dtype, uint64_t seed, double lo = -2, double hi = 2) {
  Generator gen(seed);
  return uniform(shape, lo, hi, gen, dtype);
}

Tensor randint(const Shape& shape, DType dtype, uint64_t seed, double lo = -20, double hi = 20) {
  return randu(shape, DType::Float64, seed, lo, hi).to(dtype);
}

Tensor mask_from(const std::vector<uint8_t>& v, const Shape& shape) {
  return from_vector(v, shape, DType::Bool);
}

void expect_values(const Tensor& got, const std::vector<double>& want, double rtol, double atol = 0) {
  auto g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << "at " << i;
      continue;
    }
    EXPECT_NEAR(g[i], want[i], atol + rtol * std::abs(want[i])) << "at " << i;
  }
}

// Runs op on (a, b) and compares with ref applied to the broadcast operands in double.
void check_binary(const BinaryFn& op, const RefFn& ref, const Tensor& a, const Tensor& b, double rtol) {
  Shape shape = broadcast_shapes(a.shape(), b.shape(), "test");
  Tensor out = op(a, b);
  EXPECT_EQ(out.shape(), shape);
  EXPECT_EQ(out.dtype(), a.dtype());
  EXPECT_TRUE(out.is_contiguous());
  auto av = a.expand(shape).to_vector<double>(), bv = b.expand(shape).to_vector<double>();
  std::vector<double> want(av.size());
  for (size_t i = 0; i < av.size(); ++i) want[i] = ref(av[i], bv[i]);
  expect_values(out, want, rtol);
}

struct BinaryCase {
  const char* name;
  BinaryFn op;
  RefFn ref;
  bool positive_a;  // pow needs a positive base
};

std::vector<BinaryCase> float_binary_cases() {
  return {
      {"add", [](auto& a, auto& b) { return add(a, b); }, [](double x, double y) { return x + y; }, false},
      {"sub", [](auto& a, auto& b) { return sub(a, b); }, [](double x, double y) { return x - y; }, false},
      {"mul", [](auto& a, auto& b) { return mul(a, b); }, [](double x, double y) { return x * y; }, false},
      {"div", [](auto& a, auto& b) { return div(a, b); }, [](double x, double y) { return x / y; }, false},
      {"pow", [](auto& a, auto& b) { return pow(a, b); }, [](double x, double y) { return std::pow(x, y); },
       true},
      {"maximum", [](auto& a, auto& b) { return maximum(a, b); },
       [](double x, double y) { return std::max(x, y); }, false},
      {"minimum", [](auto& a, auto& b) { return minimum(a, b); },
       [](double x, double y) { return std::min(x, y); }, false},
  };
}

TEST(Elementwise, BinaryBroadcastingEveryOpAndFloatDtype) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 1}, {1, 4}},    {{2, 3, 4}, {}},  {{}, {2, 3}},    {{4}, {2, 3, 4}},
      {{2, 1, 4}, {3, 1}}, {{5, 6}, {5, 6}}, {{0, 3}, {1, 3}}};
  uint64_t seed = 1;
  for (const auto& c : float_binary_cases()) {
    for (DType dt : {DType::Float32, DType::Float64}) {
      const double rtol = dt == DType::Float32 ? 2e-6 : 1e-14;
      for (const auto& [sa, sb] : shapes) {
        SCOPED_TRACE(std::string(c.name) + " " + shape_str(sa) + " " + shape_str(sb));
        Tensor a = c.positive_a ? randu(sa, dt, seed++, 0.5, 2) : randu(sa, dt, seed++);
        Tensor b = randu(sb, dt, seed++, 0.25, 2);  // away from 0 for div
        check_binary(c.op, c.ref, a, b, rtol);
        check_binary(c.op, c.ref, b.expand(broadcast_shapes(sa, sb, "t")).contiguous(),
                     c.positive_a ? a : neg(a), rtol);
      }
    }
  }
}

TEST(Elementwise, BinaryNonContiguousOperands) {
  Tensor base = randu({6, 8}, DType::Float32, 11);
  Tensor at = base.t();                                                       // [8, 6] transposed
  Tensor bs = randu({8, 13}, DType::Float32, 12, 0.5, 2).slice(1, 1, 13, 2);  // [8, 6], step 2
  for (const auto& c : float_binary_cases()) {
    SCOPED_TRACE(c.name);
    Tensor a = c.positive_a ? add(abs(at), 0.5) : at;
    check_binary(c.op, c.ref, a, bs, 2e-6);
    check_binary(c.op, c.ref, bs, c.positive_a ? a.t().contiguous().t() : a, 2e-6);
    // Step-sliced rows against a strided row, and against a strided column.
    check_binary(c.op, c.ref, a.slice(0, 0, 8, 3), bs.select(0, 2).unsqueeze(0), 2e-6);
    check_binary(c.op, c.ref, a, bs.select(1, 2).unsqueeze(1), 2e-6);
  }
}

TEST(Elementwise, LargeTensorsTakeParallelPaths) {
  Tensor a = randu({300, 1000}, DType::Float32, 21);
  Tensor b = randu({1, 1000}, DType::Float32, 22);
  Tensor c = randu({300, 1}, DType::Float32, 23);
  check_binary([](auto& x, auto& y) { return add(x, y); }, [](double x, double y) { return x + y; }, a, b,
               1e-6);
  check_binary([](auto& x, auto& y) { return mul(x, y); }, [](double x, double y) { return x * y; }, a, c,
               1e-6);
  check_binary([](auto& x, auto& y) { return sub(x, y); }, [](double x, double y) { return x - y; }, a.t(),
               a.t(), 1e-6);
  Tensor big = randu({200000}, DType::Float64, 24);
  expect_values(
      mul(big, 3.0),
      [&] {
        auto v = big.to_vector<double>();
        for (auto& x : v) x *= 3;
        return v;
      }(),
      1e-15);
}

TEST(Elementwise, IntegerArithmetic) {
  for (DType dt : {DType::Int32, DType::Int64}) {
    Tensor a = randint({3, 1}, dt, 31), b = randint({1, 4}, dt, 32, 1, 9);
    check_binary([](auto& x, auto& y) { return add(x, y); }, [](double x, double y) { return x + y; }, a, b,
                 0);
    check_binary([](auto& x, auto& y) { return sub(x, y); }, [](double x, double y) { return x - y; }, a, b,
                 0);
    check_binary([](auto& x, auto& y) { return mul(x, y); }, [](double x, double y) { return x * y; }, a, b,
                 0);
    check_binary([](auto& x, auto& y) { return div(x, y); },
                 [](double x, double y) { return std::trunc(x / y); }, a, b, 0);
    check_binary([](auto& x, auto& y) { return div(x, y); },
                 [](double x, double y) { return std::trunc(x / y); }, a, neg(b), 0);
    check_binary([](auto& x, auto& y) { return maximum(x, y); },
                 [](double x, double y) { return std::max(x, y); }, a, b, 0);
    check_binary([](auto& x, auto& y) { return minimum(x, y); },
                 [](double x, double y) { return std::min(x, y); }, a.t(), b.t(), 0);
    Tensor n = from_vector(std::vector<int64_t>{-7, 7, -8, 0}, {4}, dt);
    EXPECT_EQ(div(n, 2.0).to_vector<int64_t>(), (std::vector<int64_t>{-3, 3, -4, 0}));
    EXPECT_EQ(add(n, 2.7).to_vector<int64_t>(),
              (std::vector<int64_t>{-5, 9, -6, 2}));  // scalar truncated to 2
    EXPECT_EQ(neg(n).to_vector<int64_t>(), (std::vector<int64_t>{7, -7, 8, 0}));
    EXPECT_EQ(abs(n).to_vector<int64_t>(), (std::vector<int64_t>{7, 7, 8, 0}));
    EXPECT_THROW(div(n, n), Error);  // n holds a zero
    EXPECT_THROW(div(n, 0.0), Error);
  }
  Tensor lowest = from_vector(std::vector<int32_t>{std::numeric_limits<int32_t>::min()}, {1});
  EXPECT_EQ(div(lowest, -1.0).item<int32_t>(), std::numeric_limits<int32_t>::min());  // wraps, no trap
}

TEST(Elementwise, ScalarVariants) {
  Tensor x = randu({4, 5}, DType::Float64, 41).t();
  auto xv = x.to_vector<double>();
  auto map = [&](auto f) {
    std::vector<double> v(xv);
    for (auto& e : v) e = f(e);
    return v;
  };
  expect_values(add(x, 1.5), map([](double e) { return e + 1.5; }), 1e-15);
  expect_values(sub(x, 1.5), map([](double e) { return e - 1.5; }), 1e-15);
  expect_values(mul(x, -3.0), map([](double e) { return e * -3; }), 1e-15);
  expect_values(div(x, 4.0), map([](double e) { return e / 4; }), 1e-15);
  Tensor pos = add(abs(x), 0.1);
  auto pv = pos.to_vector<double>();
  for (double e : {2.0, 0.5, -1.5, 3.0}) {
    std::vector<double> want(pv);
    for (auto& v : want) v = std::pow(v, e);
    expect_values(pow(pos, e), want, 1e-14);
  }
  Tensor f = from_vector(std::vector<float>{1.25f}, {});
  EXPECT_EQ(add(f, 0.75).shape(), Shape{});
  EXPECT_FLOAT_EQ(add(f, 0.75).item<float>(), 2.0f);
  Tensor i = from_vector(std::vector<int32_t>{1, 2}, {2});
  EXPECT_THROW(add(i, 1e10), Error);
  EXPECT_THROW(add(i, std::nan("")), Error);
  EXPECT_THROW(mul(i, std::numeric_limits<double>::infinity()), Error);
  EXPECT_THROW(pow(i, 2.0), Error);
}

TEST(Elementwise, ComparisonsTensorAndScalar) {
  using CmpFn = Tensor (*)(const Tensor&, const Tensor&);
  using CmpScalarFn = Tensor (*)(const Tensor&, double);
  struct Case {
    CmpFn op;
    CmpScalarFn op_s;
    std::function<bool(double, double)> ref;
  };
  std::vector<Case> cases = {{eq, eq, std::equal_to<double>()}, {ne, ne, std::not_equal_to<double>()},
                             {lt, lt, std::less<double>()},     {le, le, std::less_equal<double>()},
                             {gt, gt, std::greater<double>()},  {ge, ge, std::greater_equal<double>()}};
  for (DType dt : {DType::Float32, DType::Float64, DType::Int32, DType::Int64}) {
    Tensor a = randint({3, 1, 4}, dt, 51, -3, 3), b = randint({2, 4}, dt, 52, -3, 3).t().contiguous().t();
    for (const auto& c : cases) {
      Tensor out = c.op(a, b);
      EXPECT_EQ(out.dtype(), DType::Bool);
      Shape shape{3, 2, 4};
      ASSERT_EQ(out.shape(), shape);
      auto av = a.expand(shape).to_vector<double>(), bv = b.expand(shape).to_vector<double>();
      auto ov = out.to_vector<bool>();
      for (size_t k = 0; k < ov.size(); ++k) EXPECT_EQ(ov[k], c.ref(av[k], bv[k])) << k;
      auto os = c.op_s(a.t(), 1.0).to_vector<bool>();
      auto at = a.t().to_vector<double>();
      for (size_t k = 0; k < os.size(); ++k) EXPECT_EQ(os[k], c.ref(at[k], 1.0)) << k;
    }
  }
  Tensor nan = from_vector(std::vector<double>{std::nan(""), 1.0}, {2});
  EXPECT_EQ(eq(nan, nan).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(ne(nan, nan).to_vector<bool>(), (std::vector<bool>{true, false}));
  Tensor m = mask_from({1, 0, 0, 1}, {2, 2}).t();
  EXPECT_EQ(logical_not(m).to_vector<bool>(), (std::vector<bool>{false, true, true, false}));
  EXPECT_THROW(logical_not(nan), Error);
  EXPECT_THROW(eq(m, m), Error);  // comparisons take numeric tensors
}

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
double gelu_erf_ref(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_ref(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

TEST(Elementwise, UnaryFloatOpsMatchStd) {
  using UnaryFn = Tensor (*)(const Tensor&);
  struct Case {
    const char* name;
    UnaryFn op;
    double (*ref)(double);
    bool positive;
  };
  std::vector<Case> cases = {
      {"neg", neg, [](double x) { return -x; }, false},
      {"abs", abs, [](double x) { return std::abs(x); }, false},
      {"exp", exp, [](double x) { return std::exp(x); }, false},
      {"log", log, [](double x) { return std::log(x); }, true},
      {"sqrt", sqrt, [](double x) { return std::sqrt(x); }, true},
      {"rsqrt", rsqrt, [](double x) { return 1 / std::sqrt(x); }, true},
      {"tanh", tanh, [](double x) { return std::tanh(x); }, false},
      {"sigmoid", sigmoid, sigmoid_ref, false},
      {"relu", relu, [](double x) { return x > 0 ? x : 0.0; }, false},
      {"silu", silu, [](double x) { return x * sigmoid_ref(x); }, false},
      {"gelu", [](const Tensor& x) { return gelu(x); }, gelu_erf_ref, false},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, GeluApprox::Tanh); }, gelu_tanh_ref, false},
  };
  for (const auto& c : cases) {
    for (DType dt : {DType::Float32, DType::Float64}) {
      SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(dt)));
      Tensor x = c.positive ? randu({7, 9}, dt, 61, 0.01, 6) : randu({7, 9}, dt, 61, -6, 6);
      for (const Tensor& in : {x, x.t(), x.slice(1, 1, 9, 3), x.select(1, 0).unsqueeze(1).expand({7, 5})}) {
        auto xv = in.to_vector<double>();
        for (auto& v : xv) v = c.ref(v);
        Tensor out = c.op(in);
        EXPECT_EQ(out.shape(), in.shape());
        expect_values(out, xv, dt == DType::Float32 ? 3e-6 : 1e-13, dt == DType::Float32 ? 1e-7 : 1e-15);
      }
    }
  }
  Tensor special = from_vector(std::vector<double>{std::nan(""), -0.0, -1e300, 1e300}, {4});
  auto r = relu(special).to_vector<double>();
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_EQ(r[2], 0.0);
  auto s = sigmoid(special).to_vector<double>();
  EXPECT_EQ(s[2], 0.0);
  EXPECT_EQ(s[3], 1.0);
  EXPECT_EQ(gelu(special).to_vector<double>()[2], 0.0);
}

TEST(Elementwise, GeluBothFormsAtKnownPoints) {
  std::vector<double> xs = {-5, -3, -1.5, -0.5, -1e-3, 0, 1e-3, 0.5, 1, 2.5, 4};
  Tensor x = from_vector(xs, {int64_t(xs.size())});
  std::vector<double> exact, approx;
  for (double v : xs) {
    exact.push_back(gelu_erf_ref(v));
    approx.push_back(gelu_tanh_ref(v));
  }
  expect_values(gelu(x, GeluApprox::None), exact, 1e-14, 1e-16);
  expect_values(gelu(x, GeluApprox::Tanh), approx, 1e-14, 1e-16);
  expect_values(gelu(x.to(DType::Float32)), exact, 2e-6, 1e-7);
  // The two forms differ measurably (guards against one silently calling the other).
  EXPECT_GT(std::abs(gelu(x).to_vector<double>()[2] - gelu(x, GeluApprox::Tanh).to_vector<double>()[2]),
            1e-5);
}

TEST(Elementwise, FusedBackwardsMatchFiniteDifferences) {
  using Fwd = std::function<Tensor(const Tensor&)>;
  using Bwd = std::function<Tensor(const Tensor&, const Tensor&)>;
  std::vector<std::pair<Fwd, Bwd>> cases = {
      {[](auto& x) { return gelu(x); }, [](auto& g, auto& x) { return gelu_backward(g, x); }},
      {[](auto& x) { return gelu(x, GeluApprox::Tanh); },
       [](auto& g, auto& x) { return gelu_backward(g, x, GeluApprox::Tanh); }},
      {[](auto& x) { return silu(x); }, [](auto& g, auto& x) { return silu_backward(g, x); }},
  };
  Tensor x = randu({5, 8}, DType::Float64, 71, -5, 5).t();
  Tensor g = randu({8, 5}, DType::Float64, 72);
  const double h = 1e-6;
  for (const auto& [fwd, bwd] : cases) {
    auto fd = mul(div(sub(fwd(add(x, h)), fwd(sub(x, h))), 2 * h), g).to_vector<double>();
    expect_values(bwd(g, x), fd, 1e-7, 1e-9);
    Tensor g32 = g.to(DType::Float32), x32 = x.to(DType::Float32);
    expect_values(bwd(g32, x32), fd, 1e-5, 1e-6);
  }
  EXPECT_THROW(gelu_backward(g, x.t()), Error);                                // shape mismatch
  EXPECT_THROW(silu_backward(g.to(DType::Float32), x), Error);                 // dtype mismatch
  EXPECT_THROW(silu_backward(g.to(DType::Int64), x.to(DType::Int64)), Error);  // float only
}

TEST(Elementwise, Clamp) {
  Tensor x = from_vector(std::vector<double>{-3, -1, 0, 0.5, 2, std::nan("")}, {2, 3}).t();
  auto xv = x.to_vector<double>();
  auto ref = [&](double lo, double hi) {
    std::vector<double> v(xv);
    for (auto& e : v)
      if (!std::isnan(e)) e = std::min(std::max(e, lo), hi);
    return v;
  };
  const double inf = std::numeric_limits<double>::infinity();
  expect_values(clamp(x, -1.5, 1.0), ref(-1.5, 1.0), 0);
  expect_values(clamp(x, std::nullopt, 1.0), ref(-inf, 1.0), 0);
  expect_values(clamp(x, 0.0, std::nullopt), ref(0.0, inf), 0);
  expect_values(clamp(x, 1.0, -1.0), std::vector<double>{-1, -1, -1, -1, -1, std::nan("")}, 0);  // min > max
  expect_values(clamp(x.to(DType::Float32), -0.5, 0.25), ref(-0.5, 0.25), 0);
  Tensor i = from_vector(std::vector<int64_t>{-9, -2, 3, 12}, {4});
  EXPECT_EQ(clamp(i, -3.0, 5.0).to_vector<int64_t>(), (std::vector<int64_t>{-3, -2, 3, 5}));
  EXPECT_EQ(clamp(i.to(DType::Int32), std::nullopt, 0.0).to_vector<int64_t>(),
            (std::vector<int64_t>{-9, -2, 0, 0}));
  EXPECT_THROW(clamp(i.to(DType::Int32), 1e12, std::nullopt), Error);
  EXPECT_THROW(clamp(mask_from({1}, {1}), 0.0, 1.0), Error);
}

TEST(Elementwise, WhereBroadcastsThreeWays) {
  Tensor cond = mask_from({1, 0, 1}, {3, 1});
  for (DType dt : {DType::Float32, DType::Int64}) {
    Tensor a = randint({1, 4}, dt, 81), b = randint({2, 1, 1}, dt, 82);
    Tensor out = where(cond, a, b);
    Shape shape{2, 3, 4};
    ASSERT_EQ(out.shape(), shape);
    EXPECT_EQ(out.dtype(), dt);
    auto cv = cond.expand(shape).to_vector<bool>();
    auto av = a.expand(shape).to_vector<double>(), bv = b.expand(shape).to_vector<double>();
    std::vector<double> want(cv.size());
    for (size_t k = 0; k < cv.size(); ++k) want[k] = cv[k] ? av[k] : bv[k];
    expect_values(out, want, 0);
  }
  Tensor a = randu({4, 3}, DType::Float64, 83).t(), b = randu({3, 4}, DType::Float64, 84);
  Tensor c = gt(a, b);
  expect_values(where(c, a, b), maximum(a, b).to_vector<double>(), 0);
  EXPECT_THROW(where(a, a, b), Error);                                 // cond not bool
  EXPECT_THROW(where(c, a, b.to(DType::Float32)), Error);              // dtype mismatch
  EXPECT_THROW(where(c, a, randu({2, 4}, DType::Float64, 1)), Error);  // shape mismatch
  EXPECT_THROW(where(Tensor(), a, b), Error);
}

TEST(Elementwise, MaskedFill) {
  Tensor x = randu({2, 3, 4}, DType::Float32, 91);
  Tensor mask = mask_from({1, 0, 0, 1}, {1, 1, 4});
  Tensor out = masked_fill(x, mask, -std::numeric_limits<double>::infinity());
  auto xv = x.to_vector<double>(), ov = out.to_vector<double>();
  for (size_t k = 0; k < xv.size(); ++k) {
    if (k % 4 == 0 || k % 4 == 3)
      EXPECT_EQ(ov[k], -std::numeric_limits<double>::infinity());
    else
      EXPECT_EQ(ov[k], xv[k]);
  }
  Tensor xt = x.transpose(0, 2);  // [4, 3, 2]
  Tensor out2 = masked_fill(xt, mask.view({4, 1, 1}), 7.0);
  auto tv = xt.to_vector<double>(), o2 = out2.to_vector<double>();
  for (size_t k = 0; k < tv.size(); ++k) EXPECT_EQ(o2[k], (k / 6 == 0 || k / 6 == 3) ? 7.0 : tv[k]);
  Tensor xi = from_vector(std::vector<int32_t>{1, 2, 3, 4}, {4});
  EXPECT_EQ(masked_fill(xi, mask.view({4}), -5).to_vector<int32_t>(), (std::vector<int32_t>{-5, 2, 3, -5}));
  EXPECT_THROW(masked_fill(xi, mask.view({4}), -std::numeric_limits<double>::infinity()), Error);
  EXPECT_THROW(masked_fill(x, gt(x, 0.0).expand({2, 2, 3, 4}), 0), Error);  // mask larger than x
  EXPECT_THROW(masked_fill(x, mask_from({1, 0, 1}, {3}), 0), Error);        // not broadcastable
  EXPECT_THROW(masked_fill(x, x, 0), Error);                                // mask not bool
}

TEST(Elementwise, InPlaceOps) {
  Tensor base = randu({4, 6}, DType::Float64, 101);
  auto bv = base.to_vector<double>();
  Tensor self = base.clone();
  Tensor other = randu({6}, DType::Float64, 102);
  auto ov = other.to_vector<double>();
  add_(self, other, -0.5);
  std::vector<double> want(bv);
  for (size_t k = 0; k < want.size(); ++k) want[k] += -0.5 * ov[k % 6];
  expect_values(self, want, 1e-15);
  add_(self, other);
  for (size_t k = 0; k < want.size(); ++k) want[k] += ov[k % 6];
  expect_values(self, want, 1e-15);
  mul_(self, 2.0);
  for (auto& w : want) w *= 2;
  expect_values(self, want, 1e-15);
  Tensor col = randu({4, 1}, DType::Float64, 103);
  auto cv = col.to_vector<double>();
  mul_(self, col);
  for (size_t k = 0; k < want.size(); ++k) want[k] *= cv[k / 6];
  expect_values(self, want, 1e-15);

  // Writing through a transposed view updates the underlying storage in place.
  Tensor t = self.t();
  add_(t, ones({6, 4}, DType::Float64));
  for (auto& w : want) w += 1;
  expect_values(self, want, 1e-15);
  // Strided (sliced) self: only the selected columns change.
  Tensor cols = self.slice(1, 0, 6, 2);
  mul_(cols, 0.0);
  for (size_t k = 0; k < want.size(); ++k)
    if (k % 2 == 0) want[k] = 0;
  expect_values(self, want, 1e-15);
  // other overlapping self in another layout behaves as if copied first.
  Tensor sq = randu({5, 5}, DType::Float32, 104);
  auto sv = sq.to_vector<double>();
  add_(sq, sq.t());
  std::vector<double> sym(25);
  for (size_t i = 0; i < 5; ++i)
    for (size_t j = 0; j < 5; ++j) sym[i * 5 + j] = sv[i * 5 + j] + sv[j * 5 + i];
  expect_values(sq, sym, 1e-6);
  // Integer in place.
  Tensor ti = from_vector(std::vector<int64_t>{1, 2, 3}, {3});
  add_(ti, from_vector(std::vector<int64_t>{10}, {1}), 3);
  mul_(ti, 2);
  EXPECT_EQ(ti.to_vector<int64_t>(), (std::vector<int64_t>{62, 64, 66}));

  Tensor expanded = ones({1, 3}, DType::Float64).expand({4, 3});
  EXPECT_THROW(add_(expanded, ones({4, 3}, DType::Float64)), Error);  // self is a broadcast view
  EXPECT_THROW(mul_(expanded, 2.0), Error);
  Tensor small = zeros({3}, DType::Float64);
  EXPECT_THROW(add_(small, ones({2, 3}, DType::Float64)), Error);      // other larger than self
  EXPECT_THROW(mul_(small, ones({3}, DType::Float32)), Error);         // dtype mismatch
  EXPECT_THROW(add_(ti, ones({3}, DType::Int64), 0.5e19 * 4), Error);  // alpha does not fit int64
  Tensor mask = mask_from({1, 0, 1}, {3});
  EXPECT_THROW(add_(mask, mask), Error);
}

TEST(Elementwise, ArgumentErrors) {
  Tensor f = randu({2, 3}, DType::Float32, 111);
  Tensor d = randu({2, 3}, DType::Float64, 112);
  Tensor i = randint({2, 3}, DType::Int32, 113);
  Tensor m = gt(f, 0.0);
  EXPECT_THROW(add(f, randu({3, 2}, DType::Float32, 1)), Error);  // shape mismatch
  EXPECT_THROW(mul(f, randu({4, 1, 2}, DType::Float32, 1)), Error);
  EXPECT_THROW(add(f, d), Error);  // dtype mismatch
  EXPECT_THROW(lt(i, f), Error);
  EXPECT_THROW(sub(Tensor(), f), Error);  // undefined
  EXPECT_THROW(add(f, Tensor()), Error);
  EXPECT_THROW(exp(Tensor()), Error);
  EXPECT_THROW(add(m, m), Error);  // bool arithmetic
  EXPECT_THROW(neg(m), Error);
  for (auto op : {exp, log, sqrt, rsqrt, tanh, sigmoid, relu, silu}) EXPECT_THROW(op(i), Error);
  EXPECT_THROW(gelu(i), Error);
  EXPECT_THROW(pow(i, i), Error);
  EXPECT_THROW(exp(f.to(DType::BFloat16)), Error);
  try {
    add(f, d);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("add"), std::string::npos) << msg;
    EXPECT_NE(msg.find("float64"), std::string::npos) << msg;
  }
  try {
    add(f, randu({3, 2}, DType::Float32, 1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[3, 2]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace moh
