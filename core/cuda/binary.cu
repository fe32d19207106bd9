// CUDA arithmetic binary kernels (add ... minimum, fused activation backwards, a + alpha b), the
// twin of core/cpu/binary.cpp over map_elements. 16-bit floats compute in float and round once on
// store. Maximum/minimum propagate NaN like the CPU; integer division truncates toward zero, wraps
// INT_MIN / -1 and reports a zero divisor after the kernel through a device flag read back once.
#include <cuda_runtime.h>

#include <cmath>
#include <type_traits>

#include "core/cuda/elementwise_launch.cuh"
#include "core/kernels/elementwise.h"
#include "core/math/activations.h"

namespace moh::cuda {
namespace {

template <class T>
__device__ __forceinline__ T int_div(T a, T b, int* zero) {
  if (b == 0) {
    *zero = 1;  // every writer stores the same value
    return 0;
  }
  if (b == T(-1)) return T(0 - static_cast<std::make_unsigned_t<T>>(a));  // wraps instead of trapping
  return a / b;
}

// out = a / b for integers, then Error if any divisor was zero (the CPU's message).
template <class T>
void run_int_div(const Tensor& out, const Tensor& a, const Tensor& b) {
  Tensor flag = Tensor::empty({1}, DType::Int32, out.device());
  int* zero = flag.data<int32_t>();
  {
    DeviceGuard guard(out.device().index);
    MOH_CUDA_CHECK(cudaMemsetAsync(zero, 0, sizeof(int), stream_for(out)));
  }
  map_elements<T, T, T>(out, {&a, &b}, [zero] __device__(T x, T y) -> T { return int_div(x, y, zero); });
  int host = 0;
  copy_device_to_host(&host, zero, sizeof(int), out.device().index);
  MOH_CHECK(host == 0, "div: integer division by zero");
}

template <class T>
void run_binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  using C = compute_t<T>;
  auto map = [&](auto f) { map_elements<T, T, T>(out, {&a, &b}, f); };
  switch (op) {
    case BinaryOp::Add: return map([] __device__(T x, T y) { return T(C(x) + C(y)); });
    case BinaryOp::Sub: return map([] __device__(T x, T y) { return T(C(x) - C(y)); });
    case BinaryOp::Mul: return map([] __device__(T x, T y) { return T(C(x) * C(y)); });
    case BinaryOp::Maximum:
      return map([] __device__(T x, T y) {
        const C u = C(x), v = C(y);
        return T(u != u ? u : (u > v ? u : v));
      });
    case BinaryOp::Minimum:
      return map([] __device__(T x, T y) {
        const C u = C(x), v = C(y);
        return T(u != u ? u : (u < v ? u : v));
      });
    case BinaryOp::Div:
      if constexpr (std::is_integral_v<T>) return run_int_div<T>(out, a, b);
      else return map([] __device__(T x, T y) { return T(C(x) / C(y)); });
    default: break;
  }
  if constexpr (!std::is_integral_v<T>) {
    switch (op) {
      case BinaryOp::Pow: return map([] __device__(T x, T y) { return T(std::pow(C(x), C(y))); });
      case BinaryOp::GeluErfBackward:
        return map([] __device__(T g, T x) { return T(C(g) * gelu_erf_grad(C(x))); });
      case BinaryOp::GeluTanhBackward:
        return map([] __device__(T g, T x) { return T(C(g) * gelu_tanh_grad(C(x))); });
      case BinaryOp::SiluBackward: return map([] __device__(T g, T x) { return T(C(g) * silu_grad(C(x))); });
      default: break;
    }
  }
  MOH_FAIL(op_name(op), ": unsupported dtype ", dtype_name(out.dtype()));
}

}  // namespace

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  if (is_float_only(op))
    dispatch_math_float(out.dtype(), op_name(op), [&]<class T>() { run_binary<T>(op, out, a, b); });
  else
    dispatch_math_numeric(out.dtype(), op_name(op), [&]<class T>() { run_binary<T>(op, out, a, b); });
}

namespace {

template <class T>
void run_add_scaled(const Tensor& out, const Tensor& a, const Tensor& b, double alpha) {
  using C = compute_t<T>;
  const C k = static_cast<C>(alpha);
  map_elements<T, T, T>(out, {&a, &b}, [k] __device__(T x, T y) { return T(C(x) + k * C(y)); });
}

}  // namespace

void add_scaled(const Tensor& out, const Tensor& a, const Tensor& b, double alpha) {
  dispatch_math_numeric(out.dtype(), "add_", [&]<class T>() { run_add_scaled<T>(out, a, b, alpha); });
}

}  // namespace moh::cuda
