// Row-major GEMM on CUDA through cuBLASLt, for the matmul and grouped-linear kernels (and the GEMM
// benchmarks, which call gemm_lt on raw device pointers):
//   D = alpha * op(A) @ op(B) + beta * D  (+ bias per output column) (then GELU),
// strided-batched, on compute_stream(device). Row-major operands are handed to cuBLASLt's
// column-major API as the transposed problem D^T = op(B)^T @ op(A)^T, so nothing is copied.
// Types: float32 (FP32 compute, or TF32 tensor cores when moh::allow_tf32()), float64, and
// bfloat16/float16 in and out with float32 accumulation and float alpha/beta, and bfloat16/float16
// in with float32 out (GemmDesc::inputs).
// Invariants: one cuBLASLt handle and one 32 MiB workspace per device (created on first use, kept
// for the process); the algorithm for each problem (shape, strides, types, epilogue, pointer
// alignment) is chosen once by cublasLtMatmulAlgoGetHeuristic and cached. Deterministic mode
// (moh::deterministic_algorithms()) asks for algorithms with no workspace and no split-K reduction
// (CUBLASLT_REDUCTION_SCHEME_NONE), so every dot product is one sequential accumulation: the
// same inputs give the same bits on every run.
#pragma once

#include <cstdint>
#include <optional>

#include "core/dtype.h"

namespace moh::cuda {

// One input operand: a batch of row-major matrices as they lie in device memory.
struct GemmMatrix {
  const void* data = nullptr;
  int64_t ld = 0;            // row stride of the stored matrix, in elements
  int64_t batch_stride = 0;  // elements from one batch's matrix to the next; 0 = one matrix for all
  bool transposed = false;   // stored transposed: A as [k, m], B as [n, k]
};

struct GemmDesc {
  int device = 0;
  DType dtype = DType::Float32;  // of D and the bias (and of A and B unless inputs says otherwise)
  // A and B's dtype when it differs: bfloat16/float16 inputs into a float32 D (mixed precision,
  // float32 accumulation). Not combined with the bias/GELU epilogues.
  std::optional<DType> inputs;
  int64_t m = 0, n = 0, k = 0;   // op(A) [m, k], op(B) [k, n], D [m, n]
  int64_t batch = 1;
  GemmMatrix a, b;
  void* d = nullptr;
  int64_t ldd = 0;             // row stride of D (>= n)
  int64_t d_batch_stride = 0;  // elements between batches of D
  double alpha = 1.0;
  double beta = 0.0;            // != 0: D is read as the C input (accumulation in place)
  const void* bias = nullptr;   // optional [n] vector added to every row of every batch
  bool gelu = false;            // cuBLASLt's GELU (tanh approximation) on the result, after the bias
};

// Runs the GEMM (asynchronously on the device's compute stream). m, n or batch of 0 does
// nothing; k = 0 leaves beta * D without reading A or B, which is supported for beta 0 (zeros) and
// 1 (D unchanged) and without epilogues. Throws moh::Error on invalid leading dimensions or when
// cuBLASLt has no algorithm for the problem.
void gemm_lt(const GemmDesc& desc);

}  // namespace moh::cuda
