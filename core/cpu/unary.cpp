// CPU unary kernels: neg/abs (numeric), exp ... silu (float), logical_not (bool), and clamp.
// Float math runs in the tensor's own type (float32 stays float32, like PyTorch); relu and clamp
// keep NaN.
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/cpu/elementwise_loop.h"
#include "core/dispatch.h"
#include "core/kernels/elementwise.h"
#include "core/math/activations.h"

namespace moh::cpu {
namespace {

template <class T>
void run_unary(UnaryOp op, const Tensor& out, const Tensor& x) {
  auto map = [&](auto f) { map_elements<T, T>(out, {&x}, f); };
  switch (op) {
    case UnaryOp::Neg: return map([](T v) -> T { return -v; });
    case UnaryOp::Abs: return map([](T v) -> T { return v < 0 ? T(-v) : v; });
    default: break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case UnaryOp::Exp: return map([](T v) { return std::exp(v); });
      case UnaryOp::Log: return map([](T v) { return std::log(v); });
      case UnaryOp::Sqrt: return map([](T v) { return std::sqrt(v); });
      case UnaryOp::Rsqrt: return map([](T v) { return T(1) / std::sqrt(v); });
      case UnaryOp::Tanh: return map([](T v) { return std::tanh(v); });
      case UnaryOp::Sigmoid: return map([](T v) { return sigmoid_fn(v); });
      case UnaryOp::Relu: return map([](T v) { return v < T(0) ? T(0) : v; });
      case UnaryOp::GeluErf: return map([](T v) { return gelu_erf(v); });
      case UnaryOp::GeluTanh: return map([](T v) { return gelu_tanh(v); });
      case UnaryOp::Silu: return map([](T v) { return silu_fn(v); });
      default: break;
    }
  }
  MOH_FAIL(op_name(op), ": unsupported dtype ", dtype_name(out.dtype()));
}

}  // namespace

void unary(UnaryOp op, const Tensor& out, const Tensor& x) {
  if (op == UnaryOp::LogicalNot) {
    MOH_CHECK(out.dtype() == DType::Bool, "logical_not: expected a bool tensor, got ",
              dtype_name(out.dtype()));
    map_elements<bool, bool>(out, {&x}, [](bool v) { return !v; });
  } else if (is_float_only(op)) {
    dispatch_floating(out.dtype(), op_name(op), [&]<class T>() { run_unary<T>(op, out, x); });
  } else {
    dispatch_numeric(out.dtype(), op_name(op), [&]<class T>() { run_unary<T>(op, out, x); });
  }
}

void clamp(const Tensor& out, const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  dispatch_numeric(out.dtype(), "clamp", [&]<class T>() {
    using Limits = std::numeric_limits<T>;
    const T low = lo ? static_cast<T>(*lo) : (Limits::has_infinity ? -Limits::infinity() : Limits::lowest());
    const T high = hi ? static_cast<T>(*hi) : (Limits::has_infinity ? Limits::infinity() : Limits::max());
    map_elements<T, T>(out, {&x}, [low, high](T v) {
      T r = v < low ? low : v;  // a NaN v fails both tests and passes through
      return r > high ? high : r;
    });
  });
}

}  // namespace moh::cpu
