// Dtype and device dispatch for op implementations.
// dispatch_*(dtype, op, f) calls f.template operator()<T>() with the C++ type of dtype, or throws
// an Error naming `op` and the dtypes it accepts. MOH_BACKEND(device, fn, args...) calls
// moh::cpu::fn or moh::cuda::fn (declared once for both in core/kernels/).
#pragma once

#include "core/dtype.h"
#include "core/error.h"

namespace moh {

template <class F>
decltype(auto) dispatch_floating(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    default: MOH_FAIL(op, ": expected a float32 or float64 tensor, got ", dtype_name(t));
  }
}

template <class F>
decltype(auto) dispatch_numeric(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::Int32: return f.template operator()<int32_t>();
    case DType::Int64: return f.template operator()<int64_t>();
    default: MOH_FAIL(op, ": expected a float32, float64, int32 or int64 tensor, got ", dtype_name(t));
  }
}

template <class F>
decltype(auto) dispatch_all(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::BFloat16: return f.template operator()<BFloat16>();
    case DType::Float16: return f.template operator()<Float16>();
    case DType::Int32: return f.template operator()<int32_t>();
    case DType::Int64: return f.template operator()<int64_t>();
    case DType::UInt8: return f.template operator()<uint8_t>();
    case DType::Bool: return f.template operator()<bool>();
  }
  MOH_FAIL(op, ": unknown dtype");
}

}  // namespace moh

// Each op's backend function exists twice with one signature, moh::cpu::fn and moh::cuda::fn, both
// declared by its core/kernels/ header (which the caller includes); MOH_BACKEND picks by the device
// of the tensors (a CPU-only build rejects CUDA tensors, which it cannot create in the first place).
#if defined(MOH_WITH_CUDA)
#define MOH_BACKEND(device, fn, ...) \
  ((device).is_cuda() ? ::moh::cuda::fn(__VA_ARGS__) : ::moh::cpu::fn(__VA_ARGS__))
#else
#define MOH_BACKEND(device, fn, ...)                                                  \
  ((device).is_cuda() ? throw ::moh::Error(#fn ": this build has no CUDA tensor backend") \
                      : ::moh::cpu::fn(__VA_ARGS__))
#endif
