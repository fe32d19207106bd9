// Nearest upsampling and average pooling over NCHW images, forward and backward, declared once for
// both backends: moh::cpu (core/cpu/resample.cpp) and moh::cuda (core/cuda/resample.cu, on the
// tensors' device and its compute stream) each define the list in resample.inc; the checks, shapes
// and allocation are in core/ops/resample.cpp. Every tensor is contiguous and of one dtype; the output
// argument comes last and is fully overwritten. Each output element is summed by one thread in a
// fixed order: float32/float64 in double, so both backends give the same bits for any thread count;
// CUDA also takes bfloat16/float16 (summed in float32, rounded once).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/resample.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/resample.inc"
}  // namespace moh::cuda
