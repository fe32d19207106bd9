// CUDA twin of core/cpu/matmul.h: the same kernels with the same contracts (see that header), on
// the tensors' device, launched on its compute stream. Float math also accepts bfloat16/float16
// (computed in float32).
#pragma once

#include "core/tensor.h"

namespace moh::cuda {

void matmul(const Tensor& out, const Tensor& a, const Tensor& b, bool accumulate = false);

// addmm's CUDA fast path: out = a @ b + bias for a bias [N] (N = out.size(-1)) added to every row,
// in cuBLASLt's bias epilogue (one pass over out). Returns false, having done nothing, where the
// epilogue does not apply (float64, a strided bias, K = 0); the caller then writes the broadcast
// bias into out and runs matmul with accumulate.
bool matmul_bias(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias);

}  // namespace moh::cuda
