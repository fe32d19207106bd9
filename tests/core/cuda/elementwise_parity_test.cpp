// CUDA vs CPU parity of the elementwise ops through the public API: every BinaryOp (tensor and
// scalar forms), CompareOp and UnaryOp, the fused GELU/SiLU backwards, clamp, where, masked_fill,
// logical_not and the in-place ops on non-contiguous views; contiguous, strided, transposed,
// permuted, broadcast, 0-d-scalar and empty operands; int32/int64 arithmetic (truncating division,
// INT_MIN / -1) and the division-by-zero error; float64; bfloat16/float16 against the CPU float32
// result of the same rounded inputs; a launch longer than the grid-stride cap.
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "tests/core/cuda/parity.h"

namespace moh {
namespace {

using test::cpu;
using test::gpu;
using Fn1 = std::function<Tensor(const Tensor&)>;
using Fn2 = std::function<Tensor(const Tensor&, const Tensor&)>;

Tensor same(const Tensor& t) { return t; }
Tensor transposed(const Tensor& t) { return t.t(); }
Tensor permuted(const Tensor& t) { return t.permute({3, 1, 0, 2}); }

// Operand layouts: base shapes, and the view taken of each base on its device (Tensor::to makes
// its result contiguous, so the GPU views are taken after the copy).
struct Case {
  const char* name;
  Shape a, b;
  Tensor (*va)(const Tensor&);
  Tensor (*vb)(const Tensor&);
};
const Case kCases[] = {
    {"contiguous", {37, 301}, {37, 301}, same, same},
    {"strided", {37, 301}, {37, 301}, test::strided_like, test::strided_like},
    {"broadcast", {37, 1}, {1, 301}, same, same},
    {"transposed", {301, 37}, {37, 301}, transposed, same},
    {"permuted+broadcast", {3, 4, 5, 6}, {4, 1, 5}, permuted, same},
    {"size-1 dim", {5, 1, 263}, {263}, same, same},
    {"0-d scalar", {37, 301}, {}, same, same},
    {"empty", {0, 7}, {1, 7}, same, same},
};

bool is_16bit(DType d) { return d == DType::BFloat16 || d == DType::Float16; }

// Values in [-3, 3) (float64 for float64 tests, else float32), through prep, stored as dtype.
Tensor input(const Shape& shape, uint64_t seed, DType dtype, const Fn1& prep) {
  Tensor x = mul(test::rand_t(shape, seed, dtype == DType::Float64 ? DType::Float64 : DType::Float32), 3.0);
  return (prep ? prep(x) : x).to(dtype);
}

// fn on every layout case, on the GPU and on the CPU. 16-bit dtypes run on the GPU only and are
// compared with fn on the CPU float32 copies of the same rounded inputs.
void check_binary(const std::string& what, const Fn2& fn, DType dtype, double rtol, double atol, const Fn1& prep = {},
                  bool same_shape_only = false) {
  uint64_t seed = 100;
  for (const Case& c : kCases) {
    seed += 2;
    if (same_shape_only && c.va(Tensor::empty(c.a)).shape() != c.vb(Tensor::empty(c.b)).shape()) continue;
    const Tensor a = input(c.a, seed, dtype, prep), b = input(c.b, seed + 1, dtype, prep);
    const DType ref = is_16bit(dtype) ? DType::Float32 : dtype;
    const Tensor want = fn(c.va(a.to(ref)), c.vb(b.to(ref)));
    const Tensor got = fn(c.va(gpu(a)), c.vb(gpu(b)));
    test::expect_close(cpu(got).to(want.dtype()), want, rtol, atol,
                       what + " " + c.name + " " + std::string(dtype_name(dtype)));
  }
}
void check_unary(const std::string& what, const Fn1& fn, DType dtype, double rtol, double atol, const Fn1& prep = {}) {
  check_binary(what, [&](const Tensor& a, const Tensor&) { return fn(a); }, dtype, rtol, atol, prep);
}

Tensor away_from_zero(const Tensor& x) { return where(lt(x, 0.0), sub(x, 0.5), add(x, 0.5)); }
Tensor positive(const Tensor& x) { return add(abs(x), 0.25); }

// Tolerances per dtype: float32 the 1e-5; float64 a few ulp of the libm differences;
// bfloat16 / float16 one rounding of the float32 result (2^-9 and 2^-11 relative) with margin.
struct Tol {
  DType dtype;
  double rtol, atol;
};
const Tol kFloatTols[] = {{DType::Float32, 1e-5, 1e-6},
                          {DType::Float64, 1e-12, 1e-14},
                          {DType::BFloat16, 1e-2, 1e-6},
                          {DType::Float16, 2e-3, 1e-6}};

TEST(CudaParityElementwise, BinaryOpsEveryLayoutAndFloatDtype) {
  MOH_REQUIRE_GPU();
  for (const Tol& t : kFloatTols) {
    check_binary("add", [](auto& a, auto& b) { return add(a, b); }, t.dtype, t.rtol, t.atol);
    check_binary("sub", [](auto& a, auto& b) { return sub(a, b); }, t.dtype, t.rtol, t.atol);
    check_binary("mul", [](auto& a, auto& b) { return mul(a, b); }, t.dtype, t.rtol, t.atol);
    check_binary("div", [](auto& a, auto& b) { return div(a, b); }, t.dtype, t.rtol, t.atol, away_from_zero);
    check_binary("pow", [](auto& a, auto& b) { return pow(a, b); }, t.dtype, t.rtol, t.atol, positive);
    check_binary("maximum", [](auto& a, auto& b) { return maximum(a, b); }, t.dtype, t.rtol, t.atol);
    check_binary("minimum", [](auto& a, auto& b) { return minimum(a, b); }, t.dtype, t.rtol, t.atol);
    check_unary("add scalar", [](auto& a) { return add(a, 2.5); }, t.dtype, t.rtol, t.atol);
    check_unary("sub scalar", [](auto& a) { return sub(a, -1.25); }, t.dtype, t.rtol, t.atol);
    check_unary("mul scalar", [](auto& a) { return mul(a, -3.0); }, t.dtype, t.rtol, t.atol);
    check_unary("div scalar", [](auto& a) { return div(a, 7.0); }, t.dtype, t.rtol, t.atol);
    check_unary("pow scalar", [](auto& a) { return pow(a, 3.0); }, t.dtype, t.rtol, t.atol);
    check_unary("pow 2", [](auto& a) { return pow(a, 2.0); }, t.dtype, t.rtol, t.atol);
    check_unary("pow 0.5", [](auto& a) { return pow(a, 0.5); }, t.dtype, t.rtol, t.atol, positive);
  }
}

TEST(CudaParityElementwise, UnaryOpsAndActivationBackwards) {
  MOH_REQUIRE_GPU();
  for (const Tol& t : kFloatTols) {
    check_unary("neg", [](auto& x) { return neg(x); }, t.dtype, t.rtol, t.atol);
    check_unary("abs", [](auto& x) { return abs(x); }, t.dtype, t.rtol, t.atol);
    check_unary("exp", [](auto& x) { return exp(x); }, t.dtype, t.rtol, t.atol);
    check_unary("log", [](auto& x) { return log(x); }, t.dtype, t.rtol, t.atol, positive);
    check_unary("sqrt", [](auto& x) { return sqrt(x); }, t.dtype, t.rtol, t.atol, positive);
    check_unary("rsqrt", [](auto& x) { return rsqrt(x); }, t.dtype, t.rtol, t.atol, positive);
    check_unary("tanh", [](auto& x) { return tanh(x); }, t.dtype, t.rtol, t.atol);
    check_unary("sigmoid", [](auto& x) { return sigmoid(x); }, t.dtype, t.rtol, t.atol);
    check_unary("relu", [](auto& x) { return relu(x); }, t.dtype, t.rtol, t.atol);
    check_unary("gelu", [](auto& x) { return gelu(x); }, t.dtype, t.rtol, t.atol);
    check_unary("gelu tanh", [](auto& x) { return gelu(x, GeluApprox::Tanh); }, t.dtype, t.rtol, t.atol);
    check_unary("silu", [](auto& x) { return silu(x); }, t.dtype, t.rtol, t.atol);
    // The fused backwards multiply two rounded quantities: twice the single-op bound.
    const double r = 2 * t.rtol;
    check_binary("gelu_backward", [](auto& g, auto& x) { return gelu_backward(g, x); }, t.dtype, r, t.atol, {}, true);
    check_binary("gelu_backward tanh", [](auto& g, auto& x) { return gelu_backward(g, x, GeluApprox::Tanh); },
                 t.dtype, r, t.atol, {}, true);
    check_binary("silu_backward", [](auto& g, auto& x) { return silu_backward(g, x); }, t.dtype, r, t.atol, {}, true);
  }
}

// Small integers (ties for the comparisons) in every numeric dtype: results are exact.
TEST(CudaParityElementwise, ComparisonsAndIntegerArithmeticAreExact) {
  MOH_REQUIRE_GPU();
  const Fn1 small_ints = [](const Tensor& x) { return x.to(DType::Int32).to(x.dtype()); };  // -2 ... 2
  const Fn1 nonzero_ints = [](const Tensor& x) { return mul(away_from_zero(x), 10.0).to(DType::Int32).to(x.dtype()); };
  for (DType d : {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16, DType::Int32, DType::Int64}) {
    check_binary("eq", [](auto& a, auto& b) { return eq(a, b); }, d, 0, 0, small_ints);
    check_binary("ne", [](auto& a, auto& b) { return ne(a, b); }, d, 0, 0, small_ints);
    check_binary("lt", [](auto& a, auto& b) { return lt(a, b); }, d, 0, 0, small_ints);
    check_binary("le", [](auto& a, auto& b) { return le(a, b); }, d, 0, 0, small_ints);
    check_binary("gt", [](auto& a, auto& b) { return gt(a, b); }, d, 0, 0, small_ints);
    check_binary("ge", [](auto& a, auto& b) { return ge(a, b); }, d, 0, 0, small_ints);
    check_unary("ge scalar", [](auto& a) { return ge(a, 1.0); }, d, 0, 0, small_ints);
    check_unary("ne scalar", [](auto& a) { return ne(a, 0.0); }, d, 0, 0, small_ints);
  }
  for (DType d : {DType::Int32, DType::Int64}) {
    check_binary("add", [](auto& a, auto& b) { return add(a, b); }, d, 0, 0, nonzero_ints);
    check_binary("sub", [](auto& a, auto& b) { return sub(a, b); }, d, 0, 0, nonzero_ints);
    check_binary("mul", [](auto& a, auto& b) { return mul(a, b); }, d, 0, 0, nonzero_ints);
    check_binary("div", [](auto& a, auto& b) { return div(a, b); }, d, 0, 0, nonzero_ints);  // truncates
    check_binary("maximum", [](auto& a, auto& b) { return maximum(a, b); }, d, 0, 0, nonzero_ints);
    check_binary("minimum", [](auto& a, auto& b) { return minimum(a, b); }, d, 0, 0, nonzero_ints);
    check_unary("div scalar", [](auto& a) { return div(a, -3.0); }, d, 0, 0, nonzero_ints);
    check_unary("neg", [](auto& a) { return neg(a); }, d, 0, 0, nonzero_ints);
    check_unary("abs", [](auto& a) { return abs(a); }, d, 0, 0, nonzero_ints);
    check_unary("clamp", [](auto& a) { return clamp(a, -7.0, 12.0); }, d, 0, 0, nonzero_ints);
  }
  const int32_t lo = std::numeric_limits<int32_t>::min();
  const Tensor a = from_vector<int32_t>({lo, lo, 7, -7, 7, -7}, {6});
  const Tensor b = from_vector<int32_t>({-1, 1, 2, 2, -2, -2}, {6});
  test::expect_equal(cpu(div(gpu(a), gpu(b))), div(a, b), "int32 division wraps INT_MIN / -1 and truncates");
}

TEST(CudaParityElementwise, IntegerDivisionByZeroRaisesTheCpuError) {
  MOH_REQUIRE_GPU();
  for (DType d : {DType::Int32, DType::Int64}) {
    const Tensor a = gpu(arange(0, 1000, 1, d)), b = gpu(arange(0, 1000, 1, d));  // b[0] == 0
    test::expect_error([&] { div(a, b); }, {"div: integer division by zero"});
    test::expect_error([&] { div(a, 0.0); }, {"div: integer division by zero"});
    test::expect_equal(cpu(div(a, 5.0)), div(cpu(a), 5.0), "division after the error");
  }
}

TEST(CudaParityElementwise, MaximumMinimumReluClampPropagateNaN) {
  MOH_REQUIRE_GPU();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Fn1 with_nans = [nan](const Tensor& x) { return masked_fill(x, gt(x, 2.0), nan); };
  for (const Tol& t : kFloatTols) {
    check_binary("maximum NaN", [](auto& a, auto& b) { return maximum(a, b); }, t.dtype, t.rtol, t.atol, with_nans);
    check_binary("minimum NaN", [](auto& a, auto& b) { return minimum(a, b); }, t.dtype, t.rtol, t.atol, with_nans);
    check_unary("relu NaN", [](auto& x) { return relu(x); }, t.dtype, 0, 0, with_nans);
    check_unary("clamp both", [](auto& x) { return clamp(x, -0.5, 0.75); }, t.dtype, t.rtol, t.atol, with_nans);
    check_unary("clamp min", [](auto& x) { return clamp(x, -0.2, std::nullopt); }, t.dtype, t.rtol, t.atol, with_nans);
    check_unary("clamp max", [](auto& x) { return clamp(x, std::nullopt, 0.3); }, t.dtype, t.rtol, t.atol, with_nans);
  }
}

TEST(CudaParityElementwise, WhereMaskedFillLogicalNot) {
  MOH_REQUIRE_GPU();
  const Tensor x = test::rand_t({37, 301}, 9), y = test::rand_t({1, 301}, 10);
  const Tensor cond = gt(test::rand_t({37, 1}, 7), 0.0), mask = gt(test::rand_t({1, 301}, 8), 0.2), full = gt(x, 0.3);
  const Tensor full_g = test::strided_like(gpu(full));  // a non-contiguous bool condition
  for (DType d : {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16, DType::Int64, DType::Bool}) {
    const Tensor a = mul(x, 50.0).to(d), b = mul(y, 50.0).to(d);
    const Tensor ag = test::strided_like(gpu(a)), bg = gpu(b);
    const std::string name(dtype_name(d));
    test::expect_equal(cpu(where(gpu(cond), ag, bg)), where(cond, a, b), "where broadcast cond " + name);
    test::expect_equal(cpu(where(full_g, ag, bg)), where(full, a, b), "where strided cond " + name);
    test::expect_equal(cpu(masked_fill(ag, gpu(mask), -7.0)), masked_fill(a, mask, -7.0), "masked_fill " + name);
  }
  test::expect_equal(cpu(logical_not(full_g)), logical_not(full), "logical_not");
}

// In-place ops through transposed and sliced views of one base tensor on each device. bfloat16
// rounds after every op on the GPU; its reference is the same sequence in float32 on the CPU, with
// a bound for five roundings of values up to ~400 (a misplaced element is off by far more).
TEST(CudaParityElementwise, InPlaceOpsOnNonContiguousViews) {
  MOH_REQUIRE_GPU();
  for (DType d : {DType::Float32, DType::Int32, DType::BFloat16}) {
    const bool integer = d == DType::Int32;
    auto run = [&](Tensor b, const Tensor& o, const Tensor& r) {
      Tensor v = b.t();  // [45, 64], non-contiguous
      add_(v, o);
      add_(v, r, integer ? 2.0 : -0.5);
      add_(v, v);  // the operand is self
      mul_(v, r);
      mul_(v, integer ? 3.0 : 0.5);
      Tensor s = b.slice(1, 3, 40, 4);  // [64, 10], strided columns
      fill_(s, 2.5);
      Tensor n = b.narrow(0, 5, 7);
      zero_(n);
      return b;
    };
    const Tensor base = mul(test::rand_t({64, 45}, 11), 20.0).to(d);
    const Tensor other = mul(test::rand_t({45, 64}, 12), 20.0).to(d), row = mul(test::rand_t({1, 64}, 13), 5.0).to(d);
    const Tensor got = cpu(run(gpu(base), gpu(other), gpu(row)));
    const DType ref = d == DType::BFloat16 ? DType::Float32 : d;
    const Tensor want = run(base.to(ref).clone(), other.to(ref), row.to(ref));
    const double rtol = integer ? 0 : (d == DType::BFloat16 ? 2e-2 : 1e-5), atol = d == DType::BFloat16 ? 2.0 : rtol;
    test::expect_close(got.to(ref), want, rtol, atol, "in-place ops " + std::string(dtype_name(d)));
  }
}

// More elements than the 65536 x 256 threads of one grid: the grid-stride loop covers the rest.
TEST(CudaParityElementwise, LaunchLongerThanOneGrid) {
  MOH_REQUIRE_GPU();
  const int64_t n = 65536LL * 256 + 333;
  const Tensor a = test::rand_t({n}, 14), b = test::rand_t({n}, 15);
  test::expect_equal(cpu(add(gpu(a), gpu(b))), add(a, b), "add over more than one grid");
  test::expect_equal(cpu(mul(gpu(a), 0.5)), mul(a, 0.5), "scalar mul over more than one grid");
}

}  // namespace
}  // namespace moh
