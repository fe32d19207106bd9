// Dropout forward, declared once for both backends: moh::cpu (core/cpu/dropout.cpp, float32/float64)
// and moh::cuda (core/cuda/dropout.cu, on the tensors' device and its compute stream; also
// bfloat16/float16, multiplied in float32) each define the list in dropout.inc. Both draw the keep
// mask from the Philox stream by the rule in core/math/dropout_math.h, so the masks are bit-identical.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/dropout.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/dropout.inc"
}  // namespace moh::cuda
