// CPU embedding lookup and its deterministic scatter-add backward.
// Invariants: indices are contiguous int64 and already range-checked against the row count;
// the backward sums each weight row's contributions in ascending position order whatever the
// thread count (a counting sort groups positions by row, then each row is owned by one thread).
#pragma once

#include "core/tensor.h"

namespace moh::cpu {

// out [n, D] (contiguous) row p = weight row indices[p]; indices holds n elements.
void embedding(const Tensor& out, const Tensor& weight, const Tensor& indices);

// grad_weight [V, D] (contiguous, fully written here) row r = sum of grad_out rows p with
// indices[p] == r; grad_out is [n, D] (any strides).
void embedding_backward(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& indices);

}  // namespace moh::cpu
