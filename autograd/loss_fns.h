// Differentiable losses: cross_entropy over logits [N, C] with int64 targets [N] (label
// smoothing, ignore_index, mean/sum/none reduction as in core/ops.h); the backward is the fused
// cross_entropy_backward on the saved per-row log-sum-exp.
#pragma once

#include <cstdint>

#include "autograd/variable.h"
#include "core/ops.h"

namespace moh::ag {

Variable cross_entropy(const Variable& logits, const Tensor& target, double label_smoothing = 0.0,
                       int64_t ignore_index = -100, Reduction reduction = Reduction::Mean);

}  // namespace moh::ag
