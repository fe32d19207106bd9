// The gated-row kernels (gate_rows, contract in core/ops.h), declared once for both backends: moh::cpu
// (core/cpu/gate_rows.cpp) and moh::cuda (core/cuda/gate_rows.cu, on the tensors' compute stream; also
// bfloat16/float16, computed in float32) each define the list in gate_rows.inc. Every tensor is contiguous;
// the index is range-checked and distinct; outputs are preallocated and overwritten completely.
#pragma once

#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/gate_rows.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/gate_rows.inc"
}  // namespace moh::cuda
