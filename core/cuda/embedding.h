// CUDA twin of core/cpu/embedding.h: the same kernels with the same contracts (see that header), on
// the tensors' device, launched on its compute stream. Float math also accepts bfloat16/float16
// (computed in float32).
#pragma once

#include "core/tensor.h"

namespace moh::cuda {

void embedding(const Tensor& out, const Tensor& weight, const Tensor& indices);

void embedding_backward(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& indices);

}  // namespace moh::cuda
