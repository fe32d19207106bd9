// CUDA twin of core/cpu/reduce.h: the same kernels with the same contracts (see that header), on
// the tensors' device, launched on its compute stream. Float math also accepts bfloat16/float16
// (computed in float32).
#pragma once

#include <vector>

#include "core/cpu/reduce.h"  // the op enums, shared by both backends
#include "core/tensor.h"

namespace moh::cuda {

using cpu::ReduceOp;

void reduce(ReduceOp op, const Tensor& out, const Tensor& x, const std::vector<bool>& reduced);
void argmax(const Tensor& out, const Tensor& x, int64_t dim);

}  // namespace moh::cuda
