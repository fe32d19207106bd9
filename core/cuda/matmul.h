// CUDA twin of core/cpu/matmul.h: the same kernels with the same contracts (see that header), on
// the tensors' device, launched on its compute stream. Float math also accepts bfloat16/float16
// (computed in float32).
#pragma once

#include "core/tensor.h"

namespace moh::cuda {

void matmul(const Tensor& out, const Tensor& a, const Tensor& b, bool accumulate = false);

}  // namespace moh::cuda
