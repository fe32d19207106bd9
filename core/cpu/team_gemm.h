// GEMMs on the OpenMP team rather than on OpenBLAS's own threads. A call's work is cut into items,
// (matrix of the batch, band of C's rows, and of its columns when the row bands alone leave threads
// idle), run across the team, each one serial BLAS call (inside a
// parallel region OpenBLAS stays on the calling thread); small work runs on the calling thread. The
// bands follow the shape and the thread count, and OpenBLAS may round a row differently with the size
// of the call holding it, so (as with OpenBLAS's own threads) the last bits may change with the thread
// count, never between runs with the same count. Why: OpenBLAS's threading, woken for every call
// above 2^18 M*N*K, ran 1.2-2x slower than one thread on a ViT-tiny Linear's weight gradient
// ([384, 2048] @ [2048, 128]) and up to 30x on skinny ones ([10, 2048] @ [2048, 128]) when a step
// alternates shapes, where bands on the team ran 1.5-2x faster than one thread (AMD EPYC, 2 threads;
// bench/bench_matmul.cpp BM_LinearStep). Call from outside a parallel region to use the team; inside
// one, everything runs on the caller.
#pragma once

#include <cstdint>

#include "core/cpu/blas.h"

namespace moh::cpu {

// Where the batch's matrices lie: matrix i reads A at pa + a_offsets[i] and B at pb + b_offsets[i]
// (null offsets: every matrix at offset 0) and writes C at pc + i * c_stride.
struct GemmBatch {
  int64_t count = 1;
  const int64_t* a_offsets = nullptr;
  const int64_t* b_offsets = nullptr;
  int64_t c_stride = 0;
};

// C_i = alpha * op(A_i) @ op(B_i) + beta * C_i ([m, n], leading dimension ldc) for every matrix of
// `batch`. With allow_gemv a matrix of one row (m == 1) goes to gemv whole (gemm_or_gemv's rule: only
// where m follows from the operands' shapes).
template <class T>
void team_gemm(GemmOperand a, GemmOperand b, int64_t m, int64_t n, int64_t k, T alpha, const T* pa, const T* pb,
               T beta, T* pc, int64_t ldc, const GemmBatch& batch = {}, bool allow_gemv = false);

}  // namespace moh::cpu
