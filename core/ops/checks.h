// Input checks and operand preparation shared by the op front ends in core/ops/*.cpp.
#pragma once

#include "core/tensor.h"

namespace moh {

// Throws unless `t` (argument `name` of `op`) is a defined float32 or float64 tensor.
inline void check_float_argument(const char* op, const char* name, const Tensor& t) {
  MOH_CHECK(t.defined(), op, ": ", name, " is an undefined tensor");
  MOH_CHECK(t.dtype() == DType::Float32 || t.dtype() == DType::Float64, op, ": expected ", name,
            " to be float32 or float64, got ", describe(t));
}

// `t` itself when its last dim has unit stride (all BLAS-backed kernels need), else a contiguous copy.
inline Tensor with_unit_last_stride(const Tensor& t) {
  return t.dim() > 0 && t.stride(-1) == 1 ? t : t.contiguous();
}

}  // namespace moh
