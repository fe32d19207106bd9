// CPU nearest upsampling and average pooling over NCHW images, forward and backward (the checks,
// shapes and allocation are in core/ops/resample.cpp). Every tensor is contiguous, of one dtype
// (float32 or float64), on the CPU; the output argument comes last and is fully overwritten.
// Each output element is summed by one thread in a fixed order (in double), so results are the
// same bits for any thread count.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh::cpu {

// out [N, C, H * scale, W * scale] = x [N, C, H, W] repeated scale x scale.
void upsample_nearest2d(const Tensor& x, int64_t scale, const Tensor& out);
// grad_x [N, C, H, W] = the sum of each scale x scale block of grad_out [N, C, H * scale, W * scale].
void upsample_nearest2d_backward(const Tensor& grad_out, int64_t scale, const Tensor& grad_x);
// out [N, C, Ho, Wo] = the mean of each kernel x kernel window of x, windows stride apart.
void avg_pool2d(const Tensor& x, int64_t kernel, int64_t stride, const Tensor& out);
// grad_x [N, C, H, W]: the sum of grad_out / kernel^2 over the windows covering each element.
void avg_pool2d_backward(const Tensor& grad_out, int64_t kernel, int64_t stride, const Tensor& grad_x);

}  // namespace moh::cpu
