// layer_norm / rms_norm over the last dim, forward and backward, as one "centred or not" kernel,
// declared once for both backends: moh::cpu (core/cpu/norm.cpp) and moh::cuda (core/cuda/norm.cu, on
// the tensors' device and its compute stream; also bfloat16/float16, computed in float32) each define
// the list in norm.inc. All tensors are contiguous and of one floating dtype: x, out, grad_out, grad_x
// are [rows, D]; weight, bias, grad_weight, grad_bias are [D] or undefined; mean and rstd are [rows].
// `mean` defined means layer_norm (subtract the row mean); undefined means rms_norm.
#pragma once

#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/norm.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/norm.inc"
}  // namespace moh::cuda
