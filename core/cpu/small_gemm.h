// small_gemm: C[m, n] = alpha * op(A) @ op(B) + beta * C for products whose n and k are both at most
// kSmallGemmMax, as attention's block products are for heads of 16-32 over 16-32 keys (a ViT-tiny's or a
// DiT's). A BLAS call there costs several times the product (packing, and a buffer taken from a
// shared pool under a lock, which the threads of a parallel region contend for). B is copied once as
// [k][n] padded to whole vectors; each row of C is then its k products summed in ascending k into
// register vectors. Invariants: a row's bits depend only on its row of A, on B and on alpha/beta, never
// on m; beta == 0 never reads C. Single-threaded: callers run it per work item.
#pragma once

#include <cstdint>

#include "core/cpu/blas.h"
#include "core/cpu/simd_vec.h"

namespace moh::cpu {

inline constexpr int64_t kSmallGemmMax = 32;

namespace small_gemm_detail {

// V vectors per row of C (n <= V * lanes); A read along k (a_transposed: A stored [k, m]).
template <class T, int V, bool a_transposed>
void rows(GemmOperand a, GemmOperand b, int64_t m, int64_t n, int64_t k, T alpha, const T* pa, const T* pb, T beta,
          T* pc, int64_t ldc) {
  constexpr int64_t L = simd::kLanes<T>, W = V * L;
  alignas(64) T bt[kSmallGemmMax * W];
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < W; ++j) bt[p * W + j] = j < n ? (b.transposed ? pb[j * b.ld + p] : pb[p * b.ld + j]) : T(0);
  for (int64_t i = 0; i < m; ++i) {
    simd::Vec<T> acc[V] = {};
    for (int64_t p = 0; p < k; ++p) {
      const simd::Vec<T> av = simd::splat<T>(a_transposed ? pa[p * a.ld + i] : pa[i * a.ld + p]);
      for (int v = 0; v < V; ++v) acc[v] += av * simd::load(bt + p * W + v * L);
    }
    alignas(64) T sum[W];
    for (int v = 0; v < V; ++v) simd::store(sum + v * L, acc[v]);
    T* c = pc + i * ldc;
    if (beta == T(0))
      for (int64_t j = 0; j < n; ++j) c[j] = alpha * sum[j];
    else
      for (int64_t j = 0; j < n; ++j) c[j] = alpha * sum[j] + beta * c[j];
  }
}

template <class T, int V>
void rows_for(GemmOperand a, GemmOperand b, int64_t m, int64_t n, int64_t k, T alpha, const T* pa, const T* pb,
              T beta, T* pc, int64_t ldc) {
  if (a.transposed) rows<T, V, true>(a, b, m, n, k, alpha, pa, pb, beta, pc, ldc);
  else rows<T, V, false>(a, b, m, n, k, alpha, pa, pb, beta, pc, ldc);
}

}  // namespace small_gemm_detail

// Requires 1 <= n, k <= kSmallGemmMax.
template <class T>
void small_gemm(GemmOperand a, GemmOperand b, int64_t m, int64_t n, int64_t k, T alpha, const T* pa, const T* pb,
                T beta, T* pc, int64_t ldc) {
  using namespace small_gemm_detail;
  constexpr int64_t L = simd::kLanes<T>;
  switch ((n + L - 1) / L) {
    case 1: return rows_for<T, 1>(a, b, m, n, k, alpha, pa, pb, beta, pc, ldc);
    case 2: return rows_for<T, 2>(a, b, m, n, k, alpha, pa, pb, beta, pc, ldc);
    case 3: return rows_for<T, 3>(a, b, m, n, k, alpha, pa, pb, beta, pc, ldc);
    case 4: return rows_for<T, 4>(a, b, m, n, k, alpha, pa, pb, beta, pc, ldc);
    case 5: return rows_for<T, 5>(a, b, m, n, k, alpha, pa, pb, beta, pc, ldc);
    case 6: return rows_for<T, 6>(a, b, m, n, k, alpha, pa, pb, beta, pc, ldc);
    case 7: return rows_for<T, 7>(a, b, m, n, k, alpha, pa, pb, beta, pc, ldc);
    default: return rows_for<T, 8>(a, b, m, n, k, alpha, pa, pb, beta, pc, ldc);
  }
}

}  // namespace moh::cpu
