// CPU float32 2-D convolution through oneDNN primitives: forward, backward-data and backward-weights
// (+ bias). The operands are contiguous NCHW float32 tensors (user memory); each primitive works in
// the layout oneDNN picks for the problem (format_tag::any, usually channel-blocked) and the operands
// are reordered in and out of it through scratch tensors. Primitives are built once per problem
// (direction, shapes, parameters, bias, thread count) and cached for the process.
// Results are bitwise the same run to run at one thread count; see core/cpu/conv.cpp for what depends
// on the thread count.
#pragma once

#include "core/math/conv_geometry.h"
#include "core/tensor.h"

namespace moh::cpu {

// Each returns false, having written nothing, when oneDNN has no implementation for the problem (the
// caller then takes im2col); the batch is not empty.
// out [N, O, HO, WO] = conv(x, weight) + bias (bias may be undefined).
bool onednn_conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& params,
                           const Tensor& out);
// grad_input [N, C, H, W] = the input gradient of grad_out.
bool onednn_conv2d_backward_data(const Tensor& grad_out, const Tensor& weight, const Conv2dParams& params,
                                 const Tensor& grad_input);
// grad_weight and, when defined, grad_bias, summed over the batch.
bool onednn_conv2d_backward_weights(const Tensor& grad_out, const Tensor& x, const Conv2dParams& params,
                                    const Tensor& grad_weight, const Tensor& grad_bias);

}  // namespace moh::cpu
