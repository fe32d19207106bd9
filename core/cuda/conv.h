// CUDA twin of core/cpu/conv.h: conv2d forward and backward through cuDNN on the tensors' device,
// with the same contracts (see that header). Float math also accepts bfloat16/float16 (float32
// accumulation).
#pragma once

#include "core/math/conv_geometry.h"
#include "core/tensor.h"

namespace moh::cuda {

void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& params,
                    const Tensor& out);
void conv2d_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Conv2dParams& params,
                     const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias);

}  // namespace moh::cuda
