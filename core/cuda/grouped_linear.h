// CUDA twin of core/cpu/grouped_linear.h: the same kernels with the same contracts (see that header), on
// the tensors' device, launched on its compute stream. Float math also accepts bfloat16/float16
// (computed in float32).
#pragma once

#include "core/tensor.h"

namespace moh::cuda {

void gather_linear(const Tensor& out, const Tensor& x, const Tensor& index, const Tensor& offsets, const Tensor& w,
                   const Tensor& bias);
void gather_linear_backward(const Tensor& grad_x, const Tensor& grad_w, const Tensor& grad_bias,
                            const Tensor& grad_out, const Tensor& x, const Tensor& index, const Tensor& offsets,
                            const Tensor& w);
void scatter_linear(const Tensor& out, const Tensor& src, const Tensor& index, const Tensor& offsets,
                    const Tensor& w);
void scatter_linear_backward(const Tensor& grad_src, const Tensor& grad_w, const Tensor& grad_out,
                             const Tensor& src, const Tensor& index, const Tensor& offsets, const Tensor& w);

}  // namespace moh::cuda
