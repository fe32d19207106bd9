// Embedding lookup and its deterministic scatter-add backward, declared once for both backends:
// moh::cpu (core/cpu/embedding.cpp) and moh::cuda (core/cuda/embedding.cu, on the tensors' device and
// its compute stream; also bfloat16/float16) each define the list in embedding.inc.
// Invariants: indices are contiguous int64 and already range-checked against the row count; the
// backward sums each weight row's contributions in ascending position order whatever the thread
// count (positions are grouped by row, then each row is owned by one thread).
#pragma once

#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/embedding.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/embedding.inc"
}  // namespace moh::cuda
