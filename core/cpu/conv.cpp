// CPU conv2d / conv2d_backward (core/kernels/conv.h): picks the implementation per call.
//  - float32: oneDNN (core/cpu/conv_onednn.cpp) for the forward, the input gradient and the weight
//    gradient; im2col + GEMM (core/cpu/conv_im2col.cpp) for a problem oneDNN does not implement, for an
//    empty batch, and for a bias gradient asked for without the weight gradient.
//  - float64: im2col + GEMM (oneDNN has no float64 convolution).
// Determinism: every path gives the same bits run to run at a given thread count. oneDNN's forward
// and input gradient are also the same for any thread count; its weight and bias gradients split the
// batch sum over threads and change in the last bits with the thread count (docs/conv.md).
#include "core/kernels/conv.h"

#include "core/cpu/conv_im2col.h"
#include "core/cpu/conv_onednn.h"

namespace moh::cpu {
namespace {

bool use_onednn(const Tensor& x) { return x.dtype() == DType::Float32 && x.size(0) > 0; }

}  // namespace

void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& params,
                    const Tensor& out) {
  if (use_onednn(x) && onednn_conv2d_forward(x, weight, bias, params, out)) return;
  im2col_conv2d_forward(x, weight, bias, params, out);
}

void conv2d_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight, const Conv2dParams& params,
                     const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias) {
  if (!use_onednn(x)) return im2col_conv2d_backward(grad_out, x, weight, params, grad_input, grad_weight, grad_bias);
  Tensor im2col_input, im2col_weight, im2col_bias;  // what oneDNN leaves to im2col
  if (grad_input.defined() && !onednn_conv2d_backward_data(grad_out, weight, params, grad_input))
    im2col_input = grad_input;
  const bool onednn_weights = grad_weight.defined() &&
                              onednn_conv2d_backward_weights(grad_out, x, params, grad_weight, grad_bias);
  if (!onednn_weights) {
    im2col_weight = grad_weight;
    im2col_bias = grad_bias;
  }
  if (im2col_input.defined() || im2col_weight.defined() || im2col_bias.defined())
    im2col_conv2d_backward(grad_out, x, weight, params, im2col_input, im2col_weight, im2col_bias);
}

}  // namespace moh::cpu
