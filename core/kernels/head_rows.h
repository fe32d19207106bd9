// The head-row packing kernels (pack_head_rows, contract in core/ops.h), declared once for both backends:
// moh::cpu (core/cpu/head_rows.cpp) and moh::cuda (core/cuda/head_rows.cu, on the tensors' compute
// stream, nothing read back but the selection check's one value). topk is a contiguous [N, K] int64
// tensor; outputs are preallocated and overwritten completely.
#pragma once

#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/head_rows.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/head_rows.inc"
}  // namespace moh::cuda
