// CPU 2-D convolution (NCHW) as im2col + BLAS GEMM, forward and backward: float64 (the gradchecks),
// and float32 where oneDNN is not used (core/cpu/conv.cpp says when). All tensors are contiguous and
// of one dtype (float32/float64); the geometry was validated by core/ops/conv.cpp.
// Samples are processed in chunks (a fixed number per chunk, set by the shape alone): a chunk's
// columns [C/groups * KH * KW, samples * HO * WO] are one GEMM operand per group, so small planes
// still give BLAS wide products. Batch sums (weight and bias gradients) run chunk by chunk in an
// order set by the shape alone (OpenBLAS's GEMM within a chunk may still pick thread-dependent
// kernels: docs/conv.md).
#pragma once

#include "core/math/conv_geometry.h"
#include "core/tensor.h"

namespace moh::cpu {

// The contracts of conv2d_forward / conv2d_backward (core/kernels/conv.h).
void im2col_conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& params,
                           const Tensor& out);
void im2col_conv2d_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                            const Conv2dParams& params, const Tensor& grad_input, const Tensor& grad_weight,
                            const Tensor& grad_bias);

}  // namespace moh::cpu
