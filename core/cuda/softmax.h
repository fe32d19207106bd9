// CUDA twin of core/cpu/softmax.h: the same kernels with the same contracts (see that header), on
// the tensors' device, launched on its compute stream. Float math also accepts bfloat16/float16
// (computed in float32).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh::cuda {

void softmax(const Tensor& x, const Tensor& out, int64_t dim, bool log);
void softmax_backward(const Tensor& grad_out, const Tensor& out, const Tensor& grad_in, int64_t dim, bool log);

}  // namespace moh::cuda
