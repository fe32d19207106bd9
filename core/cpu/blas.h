// Typed row-major GEMM over CBLAS for CPU kernels: C = alpha * op(A) @ op(B) + beta * C, with
// float32 -> sgemm and float64 -> dgemm. Inside an OpenMP parallel region OpenBLAS runs on the
// calling thread only, so kernels may call it per work item from a parallel loop.
#pragma once

#include <cblas.h>

#include <cstdint>

namespace moh::cpu {

struct GemmOperand {
  bool transposed = false;  // read the stored [k, m] (or [n, k]) matrix transposed
  int64_t ld = 0;           // leading dimension (row stride) of the stored matrix
};

inline void gemm(GemmOperand a, GemmOperand b, int64_t m, int64_t n, int64_t k, float alpha, const float* pa,
                 const float* pb, float beta, float* pc, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, a.transposed ? CblasTrans : CblasNoTrans, b.transposed ? CblasTrans : CblasNoTrans,
              blasint(m), blasint(n), blasint(k), alpha, pa, blasint(a.ld), pb, blasint(b.ld), beta, pc, blasint(ldc));
}

inline void gemm(GemmOperand a, GemmOperand b, int64_t m, int64_t n, int64_t k, double alpha, const double* pa,
                 const double* pb, double beta, double* pc, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, a.transposed ? CblasTrans : CblasNoTrans, b.transposed ? CblasTrans : CblasNoTrans,
              blasint(m), blasint(n), blasint(k), alpha, pa, blasint(a.ld), pb, blasint(b.ld), beta, pc, blasint(ldc));
}

}  // namespace moh::cpu
