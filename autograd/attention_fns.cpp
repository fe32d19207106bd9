// attention / attention_packed as tape nodes around the fused forward and backward kernels.
#include "autograd/attention_fns.h"

#include "autograd/tape.h"
#include "core/ops.h"

namespace moh::ag {

Variable attention(const Variable& q, const Variable& k, const Variable& v, double scale, bool causal) {
  AttentionForward fwd = moh::attention(q.data(), k.data(), v.data(), scale, causal);
  Tensor qd = q.data(), kd = k.data(), vd = v.data();
  return record("attention", fwd.out, {q, k, v}, [qd, kd, vd, fwd, scale, causal](const Tensor& g, const Needs&) {
    AttentionBackward grads = moh::attention_backward(g, qd, kd, vd, fwd, scale, causal);
    return std::vector<Tensor>{grads.grad_q, grads.grad_k, grads.grad_v};
  });
}

Variable attention_packed(const Variable& q_rows, const Tensor& row_offsets, const Tensor& q_pos, const Variable& k,
                          const Variable& v, double scale, bool causal, int64_t heads) {
  AttentionForward fwd =
      moh::attention_packed(q_rows.data(), row_offsets, q_pos, k.data(), v.data(), scale, causal, heads);
  Tensor qd = q_rows.data(), kd = k.data(), vd = v.data();
  return record("attention_packed", fwd.out, {q_rows, k, v},
                [qd, kd, vd, fwd, row_offsets, q_pos, scale, causal, heads](const Tensor& g, const Needs&) {
                  AttentionBackward grads =
                      moh::attention_packed_backward(g, qd, row_offsets, q_pos, kd, vd, fwd, scale, causal, heads);
                  return std::vector<Tensor>{grads.grad_q, grads.grad_k, grads.grad_v};
                });
}

}  // namespace moh::ag
