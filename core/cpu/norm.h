// CPU layer_norm / rms_norm over the last dim, forward and backward, as one "centred or not" kernel.
// All tensors are contiguous and of one floating dtype: x, out, grad_out, grad_x are [rows, D];
// weight, bias, grad_weight, grad_bias are [D] or undefined; mean and rstd are [rows]. `mean`
// defined means layer_norm (subtract the row mean); undefined means rms_norm.
#pragma once

#include "core/tensor.h"

namespace moh::cpu {

// out = (x - mean) * rstd * weight + bias, rstd = 1 / sqrt(var + eps) (rms_norm: mean 0 and
// var = mean(x^2)). Writes the per-row statistics into mean (when defined) and rstd.
void norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out,
                  const Tensor& mean, const Tensor& rstd);
// Writes grad_x, and grad_weight / grad_bias when they are defined (summed over rows in a fixed
// order, so the result does not depend on the thread count).
void norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                   const Tensor& weight, const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias);

}  // namespace moh::cpu
