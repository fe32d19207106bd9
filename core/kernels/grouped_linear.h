// The grouped row projections (gather_linear / scatter_linear, contract in core/ops.h), declared once
// for both backends: moh::cpu (core/cpu/grouped_linear.cpp) and moh::cuda (core/cuda/grouped_linear.cu,
// on the tensors' device and its compute stream; also bfloat16/float16, accumulated in float32) each
// define the list in grouped_linear.inc. x, src, grad_out, index and offsets are contiguous; w and bias
// have a unit last stride. Outputs are preallocated and contiguous; the kernels overwrite them completely.
#pragma once

#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/grouped_linear.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/grouped_linear.inc"
}  // namespace moh::cuda
