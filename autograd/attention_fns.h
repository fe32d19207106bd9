// Differentiable scaled dot-product attention (core/ops.h: attention, attention_packed): one tape
// node per call, saving q, k, v, the output and its log-sum-exp; the backward is the fused blocked
// kernel. Index tensors (row_offsets, q_pos) are not differentiable.
#pragma once

#include "autograd/variable.h"

namespace moh::ag {

// q [B, H, Tq, D], k [B, H, Tk, D], v [B, H, Tk, Dv] -> [B, H, Tq, Dv] (memory laid out [B, Tq, H, Dv]).
Variable attention(const Variable& q, const Variable& k, const Variable& v, double scale, bool causal);
// Packed query rows [R, D] grouped by (batch, head) through row_offsets, at positions q_pos -> [R, Dv].
Variable attention_packed(const Variable& q_rows, const Tensor& row_offsets, const Tensor& q_pos, const Variable& k,
                          const Variable& v, double scale, bool causal);

}  // namespace moh::ag
