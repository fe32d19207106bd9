// Differentiable scaled dot-product attention (core/ops.h: attention, attention_packed): one tape
// node per call, saving q, k, v, the output and its log-sum-exp; the backward is the fused blocked
// kernel. Index tensors (row_offsets, q_pos) are not differentiable.
#pragma once

#include "autograd/variable.h"

namespace moh::ag {

// q [B, H, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk, Dv] -> [B, H, Tq, Dv] (memory laid out [B, Tq, H, Dv]);
// Hkv dividing H is grouped-query attention (core/ops.h), whose k, v gradients sum over each group.
Variable attention(const Variable& q, const Variable& k, const Variable& v, double scale, bool causal);
// Packed query rows [R, D] grouped by (batch, head) through row_offsets, at positions q_pos -> [R, Dv];
// `heads` query heads (0: one per K/V head of k).
Variable attention_packed(const Variable& q_rows, const Tensor& row_offsets, const Tensor& q_pos, const Variable& k,
                          const Variable& v, double scale, bool causal, int64_t heads = 0);

}  // namespace moh::ag
