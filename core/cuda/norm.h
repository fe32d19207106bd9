// CUDA twin of core/cpu/norm.h: the same kernels with the same contracts (see that header), on
// the tensors' device, launched on its compute stream. Float math also accepts bfloat16/float16
// (computed in float32).
#pragma once

#include "core/tensor.h"

namespace moh::cuda {

void norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out,
                  const Tensor& mean, const Tensor& rstd);
void norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                   const Tensor& weight, const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias);

}  // namespace moh::cuda
