// CUDA twin of core/cpu/group_norm.h: the same contracts (see that header), on the tensors' device,
// launched on its compute stream. Also accepts bfloat16/float16 (computed in float32, statistics saved
// in float32: core/ops/checks.h statistic_dtype).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh::cuda {

void group_norm_forward(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias, double eps,
                        const Tensor& out, const Tensor& mean, const Tensor& rstd);
void group_norm_backward(const Tensor& grad_out, const Tensor& x, int64_t groups, const Tensor& mean,
                         const Tensor& rstd, const Tensor& weight, const Tensor& grad_x, const Tensor& grad_weight,
                         const Tensor& grad_bias);

}  // namespace moh::cuda
