// group_norm forward and backward (core/ops.h), declared once for both backends: moh::cpu
// (core/cpu/group_norm.cpp) and moh::cuda (core/cuda/group_norm.cu, on the tensors' device and its
// compute stream; also bfloat16/float16, computed in float32 with statistics saved in float32:
// core/ops/checks.h statistic_dtype) each define the list in group_norm.inc. All tensors are
// contiguous and of one floating dtype: x, out, grad_out, grad_x are [N, C, S] (S = the product of
// the trailing dims); weight, bias, grad_weight, grad_bias are [C] or undefined; mean and rstd are
// [N * groups]. A "row" is one sample's group: C / groups * S consecutive values.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/group_norm.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/group_norm.inc"
}  // namespace moh::cuda
