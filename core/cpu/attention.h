// CPU kernels of blocked scaled dot-product attention (dense and packed-query forms); the op
// contract (shapes, layouts, causal rule) is documented in core/ops.h. Outputs are preallocated by
// the front end: out/lse for forward; grad_q/grad_k/grad_v (any layout with unit last stride) for
// backward, which the kernels overwrite completely. k, v (and grad_k, grad_v) have Hkv heads, which
// divides the query heads (q.size(1) dense, `heads` packed); the front end has checked it.
#pragma once

#include "core/tensor.h"

namespace moh::cpu {

void attention(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v, double scale,
               bool causal);
void attention_backward(const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v, const Tensor& grad_out,
                        const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        double scale, bool causal);
void attention_packed(const Tensor& out, const Tensor& lse, const Tensor& q_rows, const Tensor& row_offsets,
                      const Tensor& q_pos, int64_t heads, const Tensor& k, const Tensor& v, double scale,
                      bool causal);
void attention_packed_backward(const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v,
                               const Tensor& grad_out, const Tensor& q_rows, const Tensor& row_offsets,
                               const Tensor& q_pos, int64_t heads, const Tensor& k, const Tensor& v,
                               const Tensor& out, const Tensor& lse, double scale, bool causal);

}  // namespace moh::cpu
