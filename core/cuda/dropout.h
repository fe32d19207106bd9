// CUDA twin of core/cpu/dropout.h: the same kernels with the same contracts (see that header), on
// the tensors' device, launched on its compute stream. Float math also accepts bfloat16/float16
// (computed in float32).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh::cuda {

void dropout(const Tensor& out, const Tensor& mask, const Tensor& x, double p, uint64_t seed,
             uint64_t offset);

}  // namespace moh::cuda
