// Dtype dispatch for CUDA kernels: the math floats (float32, float64, bfloat16, float16), alone or
// with int32/int64, and the types each computes (compute_t) and accumulates (acc_t) in. 16-bit types
// are storage only (core/half.h): kernels load them, compute in float and round once on store, so a
// bf16 op's error is one rounding of the float result.
#pragma once

#include <type_traits>

#include "core/dispatch.h"
#include "core/half.h"

namespace moh::cuda {

template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, BFloat16> || std::is_same_v<T, Float16>;

template <class F>
decltype(auto) dispatch_math_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::BFloat16: return f.template operator()<BFloat16>();
    case DType::Float16: return f.template operator()<Float16>();
    default: MOH_FAIL(op, ": expected a float32, float64, bfloat16 or float16 tensor, got ", dtype_name(t));
  }
}

// The type a kernel computes T in: float for the 16-bit floats, T itself otherwise (ints stay exact).
template <class T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;

// dispatch_numeric plus bfloat16/float16: the dtypes of the CUDA arithmetic and comparison kernels.
template <class F>
decltype(auto) dispatch_math_numeric(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::BFloat16: return f.template operator()<BFloat16>();
    case DType::Float16: return f.template operator()<Float16>();
    case DType::Int32: return f.template operator()<int32_t>();
    case DType::Int64: return f.template operator()<int64_t>();
    default:
      MOH_FAIL(op, ": expected a float32, float64, bfloat16, float16, int32 or int64 tensor, got ",
               dtype_name(t));
  }
}

// Loads/stores through the accumulator type: half -> float -> half, float and double unchanged.
template <class T>
__host__ __device__ __forceinline__ acc_t<T> load_acc(const T& v) {
  return static_cast<acc_t<T>>(v);
}
template <class T>
__host__ __device__ __forceinline__ T store_acc(acc_t<T> v) {
  return T(v);
}

}  // namespace moh::cuda
