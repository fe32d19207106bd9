// Strided copy with dtype conversion, the kernel behind Tensor::copy_, contiguous() and to(dtype),
// declared once for both backends: moh::cpu (core/cpu/copy.cpp) and moh::cuda (core/cuda/copy.cu, on
// the tensors' device and its compute stream; bfloat16/float16 convert through float32) each define
// the list in copy.inc. Both cast element by element as core/math/convert.h says.
#pragma once

#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/copy.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/copy.inc"
}  // namespace moh::cuda
