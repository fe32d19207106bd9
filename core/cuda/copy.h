// CUDA twin of core/cpu/copy.h: the same kernels with the same contracts (see that header), on
// the tensors' device, launched on its compute stream. Float math also accepts bfloat16/float16
// (computed in float32).
#pragma once

#include "core/tensor.h"

namespace moh::cuda {

void copy(const Tensor& dst, const Tensor& src);

}  // namespace moh::cuda
