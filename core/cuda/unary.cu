// CUDA unary kernels: neg/abs (numeric), exp ... silu (float), logical_not (bool), and clamp; the
// twin of core/cpu/unary.cpp over map_elements. Float math runs in the tensor's own type (16-bit
// floats in float, rounded once on store); relu and clamp keep NaN.
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/cuda/elementwise_launch.cuh"
#include "core/kernels/elementwise.h"
#include "core/math/activations.h"

namespace moh::cuda {
namespace {

template <class T>
void run_unary(UnaryOp op, const Tensor& out, const Tensor& x) {
  using C = compute_t<T>;
  auto map = [&](auto f) { map_elements<T, T>(out, {&x}, f); };
  switch (op) {
    case UnaryOp::Neg: return map([] __device__(T v) { return T(-C(v)); });
    case UnaryOp::Abs:
      return map([] __device__(T v) {
        const C c = C(v);
        return T(c < 0 ? C(-c) : c);
      });
    default: break;
  }
  if constexpr (!std::is_integral_v<T>) {
    switch (op) {
      case UnaryOp::Exp: return map([] __device__(T v) { return T(std::exp(C(v))); });
      case UnaryOp::Log: return map([] __device__(T v) { return T(std::log(C(v))); });
      case UnaryOp::Sqrt: return map([] __device__(T v) { return T(std::sqrt(C(v))); });
      case UnaryOp::Rsqrt: return map([] __device__(T v) { return T(C(1) / std::sqrt(C(v))); });
      case UnaryOp::Tanh: return map([] __device__(T v) { return T(std::tanh(C(v))); });
      case UnaryOp::Sigmoid: return map([] __device__(T v) { return T(sigmoid_fn(C(v))); });
      case UnaryOp::Relu:
        return map([] __device__(T v) {
          const C c = C(v);
          return T(c < C(0) ? C(0) : c);
        });
      case UnaryOp::GeluErf: return map([] __device__(T v) { return T(gelu_erf(C(v))); });
      case UnaryOp::GeluTanh: return map([] __device__(T v) { return T(gelu_tanh(C(v))); });
      case UnaryOp::Silu: return map([] __device__(T v) { return T(silu_fn(C(v))); });
      default: break;
    }
  }
  MOH_FAIL(op_name(op), ": unsupported dtype ", dtype_name(out.dtype()));
}

template <class T>
void run_clamp(const Tensor& out, const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  using C = compute_t<T>;
  using Limits = std::numeric_limits<C>;
  const C low = lo ? static_cast<C>(*lo) : (Limits::has_infinity ? -Limits::infinity() : Limits::lowest());
  const C high = hi ? static_cast<C>(*hi) : (Limits::has_infinity ? Limits::infinity() : Limits::max());
  map_elements<T, T>(out, {&x}, [low, high] __device__(T v) {
    const C c = C(v);
    const C r = c < low ? low : c;  // a NaN v fails both tests and passes through
    return T(r > high ? high : r);
  });
}

}  // namespace

void unary(UnaryOp op, const Tensor& out, const Tensor& x) {
  if (op == UnaryOp::LogicalNot) {
    MOH_CHECK(out.dtype() == DType::Bool, "logical_not: expected a bool tensor, got ",
              dtype_name(out.dtype()));
    map_elements<bool, bool>(out, {&x}, [] __device__(bool v) { return !v; });
  } else if (is_float_only(op)) {
    dispatch_math_float(out.dtype(), op_name(op), [&]<class T>() { run_unary<T>(op, out, x); });
  } else {
    dispatch_math_numeric(out.dtype(), op_name(op), [&]<class T>() { run_unary<T>(op, out, x); });
  }
}

void clamp(const Tensor& out, const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  dispatch_math_numeric(out.dtype(), "clamp", [&]<class T>() { run_clamp<T>(out, x, lo, hi); });
}

}  // namespace moh::cuda
