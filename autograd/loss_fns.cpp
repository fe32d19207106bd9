// cross_entropy: saves logits, target and the row log-sum-exp; no softmax is stored.
#include "autograd/loss_fns.h"

#include "autograd/tape.h"

namespace moh::ag {

Variable cross_entropy(const Variable& logits, const Tensor& target, double label_smoothing,
                       int64_t ignore_index, Reduction reduction) {
  CrossEntropyForward forward =
      moh::cross_entropy(logits.data(), target, label_smoothing, ignore_index, reduction);
  return record("cross_entropy", forward.loss, {logits},
                [logits = logits.data(), target, lse = forward.lse, label_smoothing, ignore_index, reduction](
                    const Tensor& g, const Needs&) {
                  return std::vector<Tensor>{moh::cross_entropy_backward(
                      g, logits, target, lse, label_smoothing, ignore_index, reduction)};
                });
}

}  // namespace moh::ag
