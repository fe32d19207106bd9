// CPU group_norm forward and backward (core/ops.h). All tensors are contiguous and of one floating
// dtype: x, out, grad_out, grad_x are [N, C, S] (S = the product of the trailing dims); weight, bias,
// grad_weight, grad_bias are [C] or undefined; mean and rstd are [N * groups]. A "row" is one
// sample's group: C / groups * S consecutive values.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh::cpu {

// out = (x - mean) * rstd * weight[c] + bias[c] per row; writes the row statistics.
void group_norm_forward(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias, double eps,
                        const Tensor& out, const Tensor& mean, const Tensor& rstd);
// Writes grad_x, and grad_weight / grad_bias when defined.
void group_norm_backward(const Tensor& grad_out, const Tensor& x, int64_t groups, const Tensor& mean,
                         const Tensor& rstd, const Tensor& weight, const Tensor& grad_x, const Tensor& grad_weight,
                         const Tensor& grad_bias);

}  // namespace moh::cpu
