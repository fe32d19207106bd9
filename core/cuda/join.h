// CUDA twin of core/cpu/join.h: the same kernels with the same contracts (see that header), on
// the tensors' device, launched on its compute stream. Float math also accepts bfloat16/float16
// (computed in float32).
#pragma once

#include <vector>

#include "core/tensor.h"

namespace moh::cuda {

void cat(const Tensor& out, const std::vector<Tensor>& inputs, int64_t dim);

}  // namespace moh::cuda
