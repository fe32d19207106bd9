// CUDA twin of core/cpu/cross_entropy.h: the same kernels with the same contracts (see that header), on
// the tensors' device, launched on its compute stream. Float math also accepts bfloat16/float16
// (computed in float32).
#pragma once

#include "core/ops.h"

namespace moh::cuda {

void cross_entropy(const Tensor& logits, const Tensor& target, double label_smoothing, int64_t ignore_index,
                   Reduction reduction, const Tensor& loss, const Tensor& lse);
void cross_entropy_backward(const Tensor& grad_loss, const Tensor& logits, const Tensor& target, const Tensor& lse,
                            double label_smoothing, int64_t ignore_index, Reduction reduction,
                            const Tensor& grad_logits);

}  // namespace moh::cuda
