// team_gemm (see team_gemm.h): the split of a batch of GEMMs into row bands and their run on the team.
#include "core/cpu/team_gemm.h"

#include <omp.h>

#include <algorithm>
#include <numeric>

namespace moh::cpu {
namespace {

// A band's rows (columns) are a multiple of this (every sgemm/dgemm kernel's M and N unroll divides it).
constexpr int64_t kBandRows = 16;
constexpr int64_t kBandColumns = 16;
// M*N*K of the smallest band worth a thread of its own.
constexpr int64_t kMinBandWork = int64_t(1) << 16;

// Runs the BLAS calls in its scope on the calling thread: an OpenMP OpenBLAS takes its thread count
// from omp_get_max_threads() at each call made outside a parallel region.
class SerialBlas {
 public:
  SerialBlas() : threads_(omp_in_parallel() ? 1 : omp_get_max_threads()) {
    if (threads_ > 1) omp_set_num_threads(1);
  }
  ~SerialBlas() {
    if (threads_ > 1) omp_set_num_threads(threads_);
  }
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;

 private:
  int threads_;
};

// How many row bands each of `count` [m, n] GEMMs (depth k) is cut into: enough that the count * bands
// items share out evenly over the threads (threads / gcd(count, threads)), no band thinner than
// kBandRows rows or lighter than kMinBandWork.
int64_t bands_per_matrix(int64_t count, int64_t m, int64_t n, int64_t k, int64_t threads) {
  int64_t bands = threads / std::gcd(count, threads);
  bands = std::min(bands, (m + kBandRows - 1) / kBandRows);
  bands = std::min(bands, m * n * k / kMinBandWork);
  return std::max<int64_t>(bands, 1);
}

// When `items` row bands leave threads idle (a product of few rows: a narrow layer's weight gradient),
// how many bands C's columns are cut into as well, under the same limits.
int64_t column_bands(int64_t items, int64_t m, int64_t n, int64_t k, int64_t threads) {
  if (items >= threads) return 1;
  int64_t bands = threads / items;
  bands = std::min(bands, (n + kBandColumns - 1) / kBandColumns);
  bands = std::min(bands, m * n * k / (items * kMinBandWork));
  return std::max<int64_t>(bands, 1);
}

// The length of each of `bands` bands covering `size`, rounded up to a multiple of `grain` (the last band
// may be shorter, or empty).
int64_t band_length(int64_t size, int64_t bands, int64_t grain) {
  return (size + bands * grain - 1) / (bands * grain) * grain;
}

}  // namespace

template <class T>
void team_gemm(GemmOperand a, GemmOperand b, int64_t m, int64_t n, int64_t k, T alpha, const T* pa, const T* pb,
               T beta, T* pc, int64_t ldc, const GemmBatch& batch, bool allow_gemv) {
  if (batch.count <= 0 || m <= 0 || n <= 0) return;
  const int64_t threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const bool whole_gemv = allow_gemv && m == 1;
  const int64_t bands = whole_gemv || threads <= 1 ? 1 : bands_per_matrix(batch.count, m, n, k, threads);
  const int64_t band_rows = band_length(m, bands, kBandRows);
  const int64_t col_bands = whole_gemv || threads <= 1 ? 1 : column_bands(batch.count * bands, m, n, k, threads);
  const int64_t band_cols = band_length(n, col_bands, kBandColumns);
  const int64_t items = batch.count * bands * col_bands;
  auto run = [&](int64_t item) {
    const int64_t i = item / (bands * col_bands), band = item % (bands * col_bands);
    const int64_t r0 = band / col_bands * band_rows, rows = std::min(band_rows, m - r0);
    const int64_t c0 = band % col_bands * band_cols, cols = std::min(band_cols, n - c0);
    if (rows <= 0 || cols <= 0) return;
    const T* a_i = pa + (batch.a_offsets ? batch.a_offsets[i] : 0) + r0 * (a.transposed ? 1 : a.ld);
    const T* b_i = pb + (batch.b_offsets ? batch.b_offsets[i] : 0) + c0 * (b.transposed ? b.ld : 1);
    T* c_i = pc + i * batch.c_stride + r0 * ldc + c0;
    if (whole_gemv) gemm_or_gemv(a, b, rows, cols, k, alpha, a_i, b_i, beta, c_i, ldc);
    else gemm(a, b, rows, cols, k, alpha, a_i, b_i, beta, c_i, ldc);
  };
  if (items > 1 && threads > 1 && batch.count * m * n * k >= 2 * kMinBandWork) {
#pragma omp parallel for schedule(static)
    for (int64_t item = 0; item < items; ++item) run(item);
  } else {
    SerialBlas serial;
    for (int64_t item = 0; item < items; ++item) run(item);
  }
}

template void team_gemm<float>(GemmOperand, GemmOperand, int64_t, int64_t, int64_t, float, const float*, const float*,
                               float, float*, int64_t, const GemmBatch&, bool);
template void team_gemm<double>(GemmOperand, GemmOperand, int64_t, int64_t, int64_t, double, const double*,
                                const double*, double, double*, int64_t, const GemmBatch&, bool);

}  // namespace moh::cpu
