// CUDA twin of core/cpu/fill.h: the same kernels with the same contracts (see that header), on
// the tensors' device, launched on its compute stream. Float math also accepts bfloat16/float16
// (computed in float32).
#pragma once

#include "core/tensor.h"

namespace moh::cuda {

void fill(const Tensor& self, double value);

}  // namespace moh::cuda
