// The elementwise kernels (binary, compare, unary, clamp, where), declared once for both backends:
// moh::cpu (core/cpu/binary.cpp, compare.cpp, unary.cpp) and moh::cuda (core/cuda/binary.cu,
// compare.cu, unary.cu, on the tensors' device and its compute stream; bfloat16/float16 wherever
// float32 is, computed in float32) each define the list in elementwise.inc. The op kinds are
// core/math/elementwise_ops.h. Front ends in core/ops/ check shapes and dtypes and pass inputs already
// expanded to out's shape; out is either a fresh contiguous tensor or, for in-place ops, a
// non-broadcast view that inputs may alias exactly.
#pragma once

#include <optional>

#include "core/math/elementwise_ops.h"
#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/elementwise.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/elementwise.inc"
}  // namespace moh::cuda
