// The indexing kernels: index range checks, gather/scatter along a dim (index_select and index_add
// are gathers/scatters with an expanded index), top-k along the last dim and one_hot; declared once
// for both backends: moh::cpu (core/cpu/indexing.cpp) and moh::cuda (core/cuda/indexing.cu, on the
// tensors' device and its compute stream; also bfloat16/float16) each define the list in indexing.inc.
// Invariants: index tensors are int64 and were range-checked by check_index_range before any kernel
// reads through them; scatter writes are race-free and deterministic (each output element has one
// writer, and duplicates along the dim apply in index order: last write wins, adds accumulate in
// order), the same on both backends.
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/indexing.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/indexing.inc"
}  // namespace moh::cuda
