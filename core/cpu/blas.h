// Typed row-major GEMM over CBLAS for CPU kernels: C = alpha * op(A) @ op(B) + beta * C, with
// float32 -> sgemm and float64 -> dgemm. A row of C may round differently with m (OpenBLAS's kernels
// block by size: a few percent of a [m, 50] product's elements differ between m = 16 and m = 301 on
// its Haswell kernels), but the same call always gives the same bits. gemm_or_gemv() sends a single row of A
// (m == 1: one decoded token's projections, one query of attention) to gemv instead, which reads
// op(B) in place, where GEMM first packs all of B (as costly as the product itself at m == 1); its
// accumulation order differs, so use it only where m follows from the operands' shapes, never from
// data (packed or grouped rows): there a row's bits would depend on how many rows share its call.
// Inside an OpenMP parallel region OpenBLAS runs on the calling thread only, so kernels may call
// these per work item from a parallel loop.
#pragma once

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace moh::cpu {

struct GemmOperand {
  bool transposed = false;  // read the stored [k, m] (or [n, k]) matrix transposed
  int64_t ld = 0;           // leading dimension (row stride) of the stored matrix
};

// C[1, n] = alpha * a @ op(B) + beta * C as gemv: y = alpha * op'(B) x + beta * y, where x is A's
// one row (stride 1, or A's leading dimension when A is stored transposed, [k, 1]).
template <class T, class Gemv>
inline void row_times_matrix(Gemv gemv, GemmOperand a, GemmOperand b, int64_t n, int64_t k, T alpha, const T* pa,
                             const T* pb, T beta, T* pc) {
  const blasint incx = a.transposed ? blasint(a.ld) : 1;
  if (beta == T(0)) std::fill(pc, pc + n, T(0));  // C may be uninitialised: never scale what is there
  if (b.transposed)  // B stored [n, k]: y = B x
    gemv(CblasRowMajor, CblasNoTrans, blasint(n), blasint(k), alpha, pb, blasint(b.ld), pa, incx, beta, pc, 1);
  else  // B stored [k, n]: y = B^T x
    gemv(CblasRowMajor, CblasTrans, blasint(k), blasint(n), alpha, pb, blasint(b.ld), pa, incx, beta, pc, 1);
}

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

template <class T>
inline void gemm_or_gemv(GemmOperand a, GemmOperand b, int64_t m, int64_t n, int64_t k, T alpha, const T* pa,
                         const T* pb, T beta, T* pc, int64_t ldc) {
  if (m != 1 || n == 0 || k == 0) return gemm(a, b, m, n, k, alpha, pa, pb, beta, pc, ldc);
  if constexpr (std::is_same_v<T, float>) row_times_matrix(cblas_sgemv, a, b, n, k, alpha, pa, pb, beta, pc);
  else row_times_matrix(cblas_dgemv, a, b, n, k, alpha, pa, pb, beta, pc);
}

}  // namespace moh::cpu
