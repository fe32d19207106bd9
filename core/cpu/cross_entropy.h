// CPU fused cross entropy: one pass over each logits row finds its log-sum-exp (online softmax,
// core/math/softmax_math.h); the backward turns it into probabilities once, writing the gradient.
// logits [N, C], target int64 [N], lse [N] and grad_logits [N, C] are contiguous; loss and
// grad_loss are 0-d (Mean/Sum) or [N] (None). Targets are validated here, before any row runs.
#pragma once

#include "core/ops.h"

namespace moh::cpu {

void cross_entropy(const Tensor& logits, const Tensor& target, double label_smoothing, int64_t ignore_index,
                   Reduction reduction, const Tensor& loss, const Tensor& lse);
void cross_entropy_backward(const Tensor& grad_loss, const Tensor& logits, const Tensor& target, const Tensor& lse,
                            double label_smoothing, int64_t ignore_index, Reduction reduction,
                            const Tensor& grad_logits);

// The error both backends raise for a target that is neither a class index nor ignore_index.
[[noreturn]] void fail_target_out_of_range(const char* op, int64_t row, int64_t value, int64_t classes,
                                           int64_t ignore_index);

}  // namespace moh::cpu
