// CUDA twin of core/cpu/resample.h: the same kernels with the same contracts (see that header), on
// the tensors' device, launched on its compute stream. Also accepts bfloat16/float16 (summed in
// float32, rounded once); float32/float64 sum in double in the CPU's order, so they match it bit
// for bit.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh::cuda {

void upsample_nearest2d(const Tensor& x, int64_t scale, const Tensor& out);
void upsample_nearest2d_backward(const Tensor& grad_out, int64_t scale, const Tensor& grad_x);
void avg_pool2d(const Tensor& x, int64_t kernel, int64_t stride, const Tensor& out);
void avg_pool2d_backward(const Tensor& grad_out, int64_t kernel, int64_t stride, const Tensor& grad_x);

}  // namespace moh::cuda
