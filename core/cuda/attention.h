// CUDA twin of core/cpu/attention.h: the same kernels with the same contracts (see that header), on
// the tensors' device, launched on its compute stream. Float math also accepts bfloat16/float16
// (computed in float32, with a float32 lse). Head dims D, Dv up to 256. Grouped-query k, v (Hkv
// heads dividing the query heads) are read in place, as on the CPU.
#pragma once

#include "core/tensor.h"

namespace moh::cuda {

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

}  // namespace moh::cuda
