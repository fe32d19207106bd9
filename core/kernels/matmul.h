// Batched matrix multiply, declared once for both backends: moh::cpu (core/cpu/matmul.cpp, OpenBLAS
// sgemm/dgemm, float32/float64) and moh::cuda (core/cuda/matmul.cpp, cuBLASLt on the tensors' device
// and its compute stream; also bfloat16/float16 with float32 accumulation) each define the list in
// matmul.inc. Row- and column-major operand matrices are read in place, with any leading dimension
// (core/matmul_layout.h); each backend copies only what its GEMM cannot read. CUDA adds matmul_bias.
#pragma once

#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/matmul.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/matmul.inc"

// addmm's CUDA fast path: out = a @ b + bias for a bias [N] (N = out.size(-1)) added to every row,
// in cuBLASLt's bias epilogue (one pass over out). Returns false, having done nothing, where the
// epilogue does not apply (float64, a strided bias, K = 0); the caller then writes the broadcast
// bias into out and runs matmul with accumulate.
bool matmul_bias(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias);
}  // namespace moh::cuda
