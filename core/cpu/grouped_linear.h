// CPU kernels of the grouped row projections (gather_linear / scatter_linear, see core/ops.h).
// x, src, grad_out, index and offsets are contiguous; w and bias have a unit last stride. Outputs
// are preallocated and contiguous; the kernels overwrite them completely.
#pragma once

#include "core/tensor.h"

namespace moh::cpu {

void gather_linear(const Tensor& out, const Tensor& x, const Tensor& index, const Tensor& offsets, const Tensor& w,
                   const Tensor& bias);
void gather_linear_backward(const Tensor& grad_x, const Tensor& grad_w, const Tensor& grad_bias,
                            const Tensor& grad_out, const Tensor& x, const Tensor& index, const Tensor& offsets,
                            const Tensor& w);
void scatter_linear(const Tensor& out, const Tensor& src, const Tensor& index, const Tensor& offsets,
                    const Tensor& w);
void scatter_linear_backward(const Tensor& grad_src, const Tensor& grad_w, const Tensor& grad_out,
                             const Tensor& src, const Tensor& index, const Tensor& offsets, const Tensor& w);

}  // namespace moh::cpu
