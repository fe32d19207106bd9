// CPU 2-D convolution (NCHW), forward and backward: oneDNN for float32, im2col + BLAS GEMM for float64
// and for what oneDNN does not take (core/cpu/conv.cpp says which). All tensors are contiguous and of
// one dtype (float32/float64); the geometry was validated by core/ops/conv.cpp.
#pragma once

#include "core/math/conv_geometry.h"
#include "core/tensor.h"

namespace moh::cpu {

// out [N, O, HO, WO] = conv(x [N, C, H, W], weight [O, C / groups, KH, KW]) + bias [O] (bias may be
// undefined).
void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& params,
                    const Tensor& out);
// Writes each of grad_input, grad_weight, grad_bias that is defined.
void conv2d_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Conv2dParams& params,
                     const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias);

}  // namespace moh::cpu
