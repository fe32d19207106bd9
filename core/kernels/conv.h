// 2-D convolution (NCHW) forward and backward, declared once for both backends: moh::cpu
// (core/cpu/conv.cpp: oneDNN for float32, im2col + BLAS GEMM for float64 and for what oneDNN does not
// take) and moh::cuda (core/cuda/conv.cpp: cuDNN, on the tensors' device and its compute stream; also
// bfloat16/float16 with float32 accumulation) each define the list in conv.inc. All tensors are
// contiguous and of one dtype; the geometry was validated by core/ops/conv.cpp.
#pragma once

#include "core/math/conv_geometry.h"
#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/conv.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/conv.inc"
}  // namespace moh::cuda
