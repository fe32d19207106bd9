// moh_route as a tape node; its backward recomputes the routing from the saved logits.
#include "autograd/moh_route_fns.h"

#include "autograd/tape.h"

namespace moh::ag {

Route moh_route(const Variable& logits, int64_t heads, int64_t shared, int64_t topk, double eps) {
  const Tensor saved = logits.data().contiguous();  // once: the op and its backward read it as is
  MoHRoute r = moh::moh_route(saved, heads, shared, topk, eps);
  std::vector<Variable> outs = record_multi(
      "moh_route", {r.gates, r.probs}, {logits},
      [saved, heads, shared, topk, eps](const std::vector<Tensor>& grads, const Needs&) {
        return std::vector<Tensor>{moh::moh_route_backward(grads[0], grads[1], saved, heads, shared, topk, eps)};
      });
  return {outs[0], outs[1], r.mask, r.topk};
}

}  // namespace moh::ag
