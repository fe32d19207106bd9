// CPU arithmetic binary kernels (add ... minimum, fused activation backwards, a + alpha b).
// Maximum/minimum propagate NaN like PyTorch; integer division truncates toward zero, wraps
// INT_MIN / -1 and reports a zero divisor after the loop (no trap inside the parallel region).
#include <atomic>
#include <cmath>
#include <type_traits>

#include "core/cpu/elementwise_loop.h"
#include "core/dispatch.h"
#include "core/kernels/elementwise.h"
#include "core/math/activations.h"

namespace moh::cpu {
namespace {

template <class T>
T int_div(T a, T b, std::atomic<bool>& zero) {
  if (b == 0) {
    zero.store(true, std::memory_order_relaxed);
    return 0;
  }
  if (b == T(-1)) return T(0 - static_cast<std::make_unsigned_t<T>>(a));  // wraps instead of trapping
  return a / b;
}

template <class T>
void run_binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  auto map = [&](auto f) { map_elements<T, T, T>(out, {&a, &b}, f); };
  switch (op) {
    case BinaryOp::Add: return map([](T x, T y) -> T { return x + y; });
    case BinaryOp::Sub: return map([](T x, T y) -> T { return x - y; });
    case BinaryOp::Mul: return map([](T x, T y) -> T { return x * y; });
    case BinaryOp::Maximum: return map([](T x, T y) -> T { return x != x ? x : (x > y ? x : y); });
    case BinaryOp::Minimum: return map([](T x, T y) -> T { return x != x ? x : (x < y ? x : y); });
    case BinaryOp::Div:
      if constexpr (std::is_integral_v<T>) {
        std::atomic<bool> zero{false};
        map([&zero](T x, T y) -> T { return int_div(x, y, zero); });
        MOH_CHECK(!zero.load(), "div: integer division by zero");
        return;
      } else {
        return map([](T x, T y) -> T { return x / y; });
      }
    default: break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case BinaryOp::Pow: return map([](T x, T y) -> T { return std::pow(x, y); });
      case BinaryOp::GeluErfBackward: return map([](T g, T x) -> T { return g * gelu_erf_grad(x); });
      case BinaryOp::GeluTanhBackward: return map([](T g, T x) -> T { return g * gelu_tanh_grad(x); });
      case BinaryOp::SiluBackward: return map([](T g, T x) -> T { return g * silu_grad(x); });
      default: break;
    }
  }
  MOH_FAIL(op_name(op), ": unsupported dtype ", dtype_name(out.dtype()));
}

}  // namespace

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  if (is_float_only(op))
    dispatch_floating(out.dtype(), op_name(op), [&]<class T>() { run_binary<T>(op, out, a, b); });
  else
    dispatch_numeric(out.dtype(), op_name(op), [&]<class T>() { run_binary<T>(op, out, a, b); });
}

void add_scaled(const Tensor& out, const Tensor& a, const Tensor& b, double alpha) {
  dispatch_numeric(out.dtype(), "add_", [&]<class T>() {
    const T k = static_cast<T>(alpha);
    map_elements<T, T, T>(out, {&a, &b}, [k](T x, T y) -> T { return x + k * y; });
  });
}

}  // namespace moh::cpu
