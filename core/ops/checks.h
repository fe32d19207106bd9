// Input checks and operand preparation shared by the op front ends in core/ops/*.cpp.
#pragma once

#include "core/tensor.h"

namespace moh {

// The float dtypes math ops take on t's device: float32/float64 everywhere, and bfloat16/float16
// on CUDA (computed in float32 there; the CPU backend has no 16-bit math).
inline bool is_math_float(const Tensor& t) {
  const DType d = t.dtype();
  return d == DType::Float32 || d == DType::Float64 ||
         (t.device().is_cuda() && (d == DType::BFloat16 || d == DType::Float16));
}
inline const char* math_float_names(const Tensor& t) {
  return t.device().is_cuda() ? "float32, float64, bfloat16 or float16" : "float32 or float64";
}
// The math floats plus int32/int64 (arithmetic, comparisons, reductions, indexing accumulation).
inline const char* math_numeric_names(const Tensor& t) {
  return t.device().is_cuda() ? "float32, float64, bfloat16, float16, int32 or int64" : "float32, float64, int32 or int64";
}

// The dtype of the per-row statistics a forward saves for its backward (attention and cross entropy
// lse, norm mean/rstd): the accumulation type, so float32 for bfloat16/float16 inputs (a 16-bit copy
// would shift every probability and normalised value the backward recomputes), else the input's.
inline DType statistic_dtype(DType input) {
  return input == DType::BFloat16 || input == DType::Float16 ? DType::Float32 : input;
}

// Throws unless `t` (argument `name` of `op`) is a defined tensor of a math float dtype.
inline void check_float_argument(const char* op, const char* name, const Tensor& t) {
  MOH_CHECK(t.defined(), op, ": ", name, " is an undefined tensor");
  MOH_CHECK(is_math_float(t), op, ": expected ", name, " to be ", math_float_names(t), ", got ", describe(t));
}

// `t` itself when its last dim has unit stride (all BLAS-backed kernels need), else a contiguous copy.
inline Tensor with_unit_last_stride(const Tensor& t) {
  return t.dim() > 0 && t.stride(-1) == 1 ? t : t.contiguous();
}

}  // namespace moh
