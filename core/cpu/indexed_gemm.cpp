// indexed_gemm: BLIS-style blocking (see indexed_gemm.h). For each NC-wide column block and KC-deep
// slice of k, B's slice is packed into NR-wide micro-panels (zero past column n). A by rows is read
// in place, MR gathered rows at a time; a transposed A is packed in MC-row blocks, each k's
// neighbouring elements in one sweep. Every MR x NR register tile of C is loaded (rows through C's
// index), has the slice's products added in ascending k, and is stored; a tile short of rows keeps its
// missing rows in a spare tile, one short of columns (or of a C with strided columns) goes through a local
// tile. Rows read through an index are software-prefetched a few rows (or one MR slice) ahead.
// A PackedB holds a whole k x n (n <= NC) block packed the same way, for callers that multiply one weight
// block against several row ranges; the products are the same as with the block packed in the call.
// Vectors are core/cpu/simd_vec.h's (32 bytes: AVX2 registers on x86-64-v3). The build contracts
// `acc += a * b` into FMAs for this file.
#include "core/cpu/indexed_gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/cpu/simd_vec.h"
#include "core/error.h"

namespace moh::cpu {
namespace {

using simd::kLanes;
using simd::load;
using simd::splat;
using simd::store;
using simd::Vec;

constexpr int64_t kMr = 6;  // rows of a register tile
template <class T>
constexpr int64_t kNr = 2 * kLanes<T>;  // columns of a register tile: two vectors
constexpr int64_t kKc = 256, kNc = kPackedBWidth;  // k and n extents of a packed B block
constexpr int64_t kMc = 32 * kMr;        // rows of a packed (transposed) A block
constexpr int64_t kPrefetchColumns = 8;  // how far ahead a transposed B's columns are fetched while packing
constexpr int64_t kPrefetchRows = 4;     // how far ahead gathered rows are fetched while packing along k
template <class T>
constexpr int64_t kLineElements = int64_t(64 / sizeof(T));  // elements of a 64-byte cache line

// Asks for the cache lines of [p, p + count): the rows a packing loop reads along k lie an index apart,
// too far for the hardware prefetcher, and each is read once.
template <class T>
void prefetch_span(const T* p, int64_t count) {
  for (int64_t e = 0; e < count; e += kLineElements<T>) __builtin_prefetch(p + e);
}

// Where a register tile reads A(i0 + i, p0 + k), i < MR: MR row pointers along k (A by rows), or a
// packed micro-panel (a transposed A).
template <class T>
struct RowsA {
  const T* const* rows;
  T operator()(int64_t k, int64_t i) const { return rows[i][k]; }
};
template <class T>
struct PackedA {
  const T* panel;  // [kc][MR]
  T operator()(int64_t k, int64_t i) const { return panel[k * kMr + i]; }
};

// tile rows[i][col, col + NR) = (load_c ? that : 0) + sum over k < kc of a(k, i) * b[k][0, NR), with b packed
// [kc][NR].
template <class T, class ASource>
void micro_kernel(int64_t kc, ASource a, const T* b, T* const* rows, int64_t col, bool load_c) {
  constexpr int64_t L = kLanes<T>, NR = kNr<T>;
  Vec<T> acc[kMr][2];
#pragma GCC unroll 6
  for (int64_t i = 0; i < kMr; ++i) {
    acc[i][0] = load_c ? load(rows[i] + col) : Vec<T>{};
    acc[i][1] = load_c ? load(rows[i] + col + L) : Vec<T>{};
  }
  for (int64_t p = 0; p < kc; ++p) {
    const Vec<T> b0 = load(b + p * NR), b1 = load(b + p * NR + L);
#pragma GCC unroll 6
    for (int64_t i = 0; i < kMr; ++i) {
      const Vec<T> ai = splat<T>(a(p, i));
      acc[i][0] += ai * b0;
      acc[i][1] += ai * b1;
    }
  }
#pragma GCC unroll 6
  for (int64_t i = 0; i < kMr; ++i) {  // unrolled, so that acc stays in registers
    store(rows[i] + col, acc[i][0]);
    store(rows[i] + col + L, acc[i][1]);
  }
}

// Elements from one packed A micro-panel to the next: kc * MR rounded up to an odd number of cache lines.
// Packing writes every panel's next MR elements for each k; panels a power-of-two multiple of lines apart
// would all fall in one or two L1 sets and evict each other's partly written lines.
template <class T>
int64_t a_panel_stride(int64_t kc) {
  const int64_t lines = (kc * kMr + kLineElements<T> - 1) / kLineElements<T>;
  return (lines | 1) * kLineElements<T>;
}

// Packs a transposed A's block [i0, i0 + mc) x [p0, p0 + kc) into MR-row micro-panels [kc][MR] a_panel_stride
// apart, zero past row mc: each k reads its mc neighbouring elements in one sweep (gathered rows of X for
// X[index]^T, which a tile reading MR of them per row would fetch through the same cache sets).
template <class T>
void pack_a_columns(const MatrixView<const T>& a, int64_t i0, int64_t mc, int64_t p0, int64_t kc, T* dst) {
  const int64_t whole = mc / kMr, rest = mc - whole * kMr;
  for (int64_t p = 0; p < kc; ++p) {
    if (p + kPrefetchRows < kc) prefetch_span(&a.at(i0, p0 + p + kPrefetchRows), mc);
    const T* src = &a.at(i0, p0 + p);
    T* d = dst + p * kMr;
    for (int64_t t = 0; t < whole; ++t, d += a_panel_stride<T>(kc)) std::memcpy(d, src + t * kMr, sizeof(T) * kMr);
    if (rest == 0) continue;
    for (int64_t i = 0; i < rest; ++i) d[i] = src[whole * kMr + i];
    for (int64_t i = rest; i < kMr; ++i) d[i] = T(0);
  }
}

// Packs B[p0, p0 + kc) x [j0, j0 + nc) into NR-column micro-panels [tile][kc][NR], zero past column n.
// Rows with contiguous columns are copied row by row (a gathered row is read once, front to back), the
// columns of a transposed B column by column; other views element by element, a column tile at a time.
template <class T>
void pack_b(const MatrixView<const T>& b, int64_t n, int64_t p0, int64_t kc, int64_t j0, int64_t nc, T* dst) {
  constexpr int64_t NR = kNr<T>;
  const int64_t tiles = (nc + NR - 1) / NR;
  auto valid_columns = [&](int64_t t) { return std::max<int64_t>(0, std::min({NR, n - j0 - t * NR, nc - t * NR})); };
  if (b.col_stride == 1 && !b.col_index && valid_columns(tiles - 1) == NR) {
    for (int64_t p = 0; p < kc; ++p) {
      if (p + kPrefetchRows < kc) prefetch_span(&b.at(p0 + p + kPrefetchRows, j0), nc);
      const T* src = &b.at(p0 + p, j0);
      for (int64_t t = 0; t < tiles; ++t) std::memcpy(dst + (t * kc + p) * NR, src + t * NR, sizeof(T) * NR);
    }
    return;
  }
  if (b.row_stride == 1 && !b.row_index) {  // a transposed B: each column is contiguous along k
    for (int64_t t = 0; t < tiles; ++t, dst += kc * NR) {
      const int64_t valid = valid_columns(t);
      for (int64_t jj = 0; jj < valid; ++jj) {
        const int64_t j = j0 + t * NR + jj;
        if (j + kPrefetchColumns < n) {  // columns lie a row stride apart: too far for the hardware prefetcher
          prefetch_span(&b.at(p0, j + kPrefetchColumns), kc);
        }
        const T* src = &b.at(p0, j);
        for (int64_t p = 0; p < kc; ++p) dst[p * NR + jj] = src[p];
      }
      for (int64_t jj = valid; jj < NR; ++jj)
        for (int64_t p = 0; p < kc; ++p) dst[p * NR + jj] = T(0);
    }
    return;
  }
  for (int64_t t = 0; t < tiles; ++t, dst += kc * NR) {
    const int64_t c0 = j0 + t * NR, valid = valid_columns(t);
    for (int64_t p = 0; p < kc; ++p) {
      T* d = dst + p * NR;
      for (int64_t jj = 0; jj < valid; ++jj) d[jj] = b.at(p0 + p, c0 + jj);
      for (int64_t jj = valid; jj < NR; ++jj) d[jj] = T(0);
    }
  }
}

// Pointers to C's rows [i0, i0 + count) at column 0, when C's columns are contiguous (a whole tile is then
// updated in place), else none.
template <class T>
bool row_pointers(const MatrixView<T>& c, int64_t i0, int64_t count, T** out) {
  if (c.col_stride != 1 || c.col_index) return false;
  for (int64_t i = 0; i < count; ++i) out[i] = &c.at(i0 + i, 0);
  return true;
}

// One register tile of C at rows [i0, i0 + rows), columns [j0, j0 + cols). With c_rows (from row_pointers)
// and whole columns it works straight from and into C's rows, a short tile's missing rows in `spare` (an
// MR x NR scratch, zero at first, whose values never reach C); otherwise through a local tile.
template <class T, class ASource>
void update_tile(const MatrixView<T>& c, T* const* c_rows, T* spare, int64_t i0, int64_t rows, int64_t j0,
                 int64_t cols, bool load_c, int64_t kc, ASource a, const T* b) {
  constexpr int64_t NR = kNr<T>;
  if (c_rows && cols == NR) {
    if (rows == kMr) {
      micro_kernel<T>(kc, a, b, c_rows, j0, load_c);
      return;
    }
    T* out[kMr];
    for (int64_t i = 0; i < kMr; ++i) out[i] = i < rows ? c_rows[i] + j0 : spare + i * NR;
    micro_kernel<T>(kc, a, b, out, 0, load_c);
    return;
  }
  alignas(32) T local[kMr * NR] = {};
  T* out[kMr];
  for (int64_t i = 0; i < kMr; ++i) {
    out[i] = local + i * NR;
    if (load_c && i < rows)
      for (int64_t j = 0; j < cols; ++j) local[i * NR + j] = c.at(i0 + i, j0 + j);
  }
  micro_kernel<T>(kc, a, b, out, 0, load_c);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) c.at(i0 + i, j0 + j) = local[i * NR + j];
}

// C's columns [j0, j0 + nc) (+)= A's rows times B's packed kc x nc slice at k offset p0, A read by rows in
// place: each MR-row slice of A comes from memory once, then from L1 for every NR tile.
template <class T>
void multiply_rows(const MatrixView<const T>& a, int64_t m, int64_t p0, int64_t kc, const T* packed,
                   const MatrixView<T>& c, int64_t j0, int64_t nc, bool load_c) {
  constexpr int64_t NR = kNr<T>;
  alignas(32) T spare[kMr * NR] = {};
  for (int64_t i0 = 0; i0 < m; i0 += kMr) {
    const int64_t rows = std::min(kMr, m - i0);
    const T* a_rows[kMr];
    for (int64_t i = 0; i < kMr; ++i) a_rows[i] = &a.at(i0 + std::min(i, rows - 1), p0);  // edge: repeat
    // The next slice's rows (gathered ones lie anywhere) load while this slice is multiplied.
    for (int64_t i = i0 + kMr; i < std::min(m, i0 + 2 * kMr); ++i) prefetch_span(&a.at(i, p0), kc);
    T* c_rows[kMr];
    const bool in_place = row_pointers(c, i0, rows, c_rows);
    for (int64_t jt = 0; jt * NR < nc; ++jt)
      update_tile(c, in_place ? c_rows : nullptr, spare, i0, rows, j0 + jt * NR, std::min(NR, nc - jt * NR), load_c, kc,
                  RowsA<T>{a_rows}, packed + jt * kc * NR);
  }
}

// Elements per packed row of B's n columns: whole NR-wide micro-panels (PackedB's layout, [kc][NR] per panel).
template <class T>
int64_t packed_width(int64_t n) {
  return (n + kNr<T> - 1) / kNr<T> * kNr<T>;
}

// True when C has no elements or k is 0 (C then zeroed unless accumulating): nothing left to multiply.
template <class T>
bool no_products(int64_t m, int64_t n, int64_t k, const MatrixView<T>& c, bool accumulate) {
  if (m == 0 || n == 0) return true;
  if (k > 0) return false;
  if (!accumulate)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c.at(i, j) = T(0);
  return true;
}

}  // namespace

template <class T>
void indexed_gemm(int64_t m, int64_t n, int64_t k, MatrixView<const T> a, MatrixView<const T> b, MatrixView<T> c,
                  bool accumulate) {
  constexpr int64_t NR = kNr<T>;
  const bool a_by_rows = a.col_stride == 1 && !a.col_index, a_by_columns = a.row_stride == 1 && !a.row_index;
  MOH_CHECK(a_by_rows || a_by_columns, "indexed_gemm: A must have unit stride along k (rows) or i (columns)");
  if (no_products(m, n, k, c, accumulate)) return;
  thread_local std::vector<T> packed_a, packed_b;
  alignas(32) T spare[kMr * NR] = {};
  packed_a.resize(size_t(kMc / kMr * a_panel_stride<T>(kKc)));
  packed_b.resize(size_t((kNc + NR) * kKc));
  for (int64_t j0 = 0; j0 < n; j0 += kNc) {
    const int64_t nc = std::min(kNc, n - j0);
    for (int64_t p0 = 0; p0 < k; p0 += kKc) {
      const int64_t kc = std::min(kKc, k - p0);
      const bool load_c = accumulate || p0 > 0;
      pack_b(b, n, p0, kc, j0, nc, packed_b.data());
      if (a_by_rows) {
        multiply_rows(a, m, p0, kc, packed_b.data(), c, j0, nc, load_c);
        continue;
      }
      for (int64_t i0 = 0; i0 < m; i0 += kMc) {
        const int64_t mc = std::min(kMc, m - i0);
        pack_a_columns(a, i0, mc, p0, kc, packed_a.data());
        T* c_rows[kMc];
        const bool in_place = row_pointers(c, i0, mc, c_rows);
        for (int64_t jt = 0; jt * NR < nc; ++jt)
          for (int64_t it = 0; it * kMr < mc; ++it)
            update_tile(c, in_place ? c_rows + it * kMr : nullptr, spare, i0 + it * kMr, std::min(kMr, mc - it * kMr),
                        j0 + jt * NR, std::min(NR, nc - jt * NR), load_c, kc,
                        PackedA<T>{packed_a.data() + it * a_panel_stride<T>(kc)}, packed_b.data() + jt * kc * NR);
      }
    }
  }
}

template <class T>
void PackedB<T>::pack(MatrixView<const T> b, int64_t k, int64_t n) {
  MOH_CHECK(n >= 0 && n <= kPackedBWidth && k >= 0, "PackedB: a block of ", k, " x ", n, " (at most ",
            kPackedBWidth, " columns)");
  k_ = k;
  n_ = n;
  data_.resize(size_t(k * packed_width<T>(n)));
  for (int64_t p0 = 0; p0 < k; p0 += kKc)
    pack_b(b, n, p0, std::min(kKc, k - p0), 0, n, data_.data() + p0 * packed_width<T>(n));
}

template <class T>
void indexed_gemm(int64_t m, MatrixView<const T> a, const PackedB<T>& b, MatrixView<T> c, bool accumulate) {
  MOH_CHECK(a.col_stride == 1 && !a.col_index, "indexed_gemm: with a packed B, A must be read by rows");
  const int64_t k = b.k(), n = b.n();
  if (no_products(m, n, k, c, accumulate)) return;
  for (int64_t p0 = 0; p0 < k; p0 += kKc)
    multiply_rows(a, m, p0, std::min(kKc, k - p0), b.data() + p0 * packed_width<T>(n), c, 0, n, accumulate || p0 > 0);
}

template void indexed_gemm<float>(int64_t, int64_t, int64_t, MatrixView<const float>, MatrixView<const float>,
                                  MatrixView<float>, bool);
template void indexed_gemm<double>(int64_t, int64_t, int64_t, MatrixView<const double>, MatrixView<const double>,
                                   MatrixView<double>, bool);
template class PackedB<float>;
template class PackedB<double>;
template void indexed_gemm<float>(int64_t, MatrixView<const float>, const PackedB<float>&, MatrixView<float>, bool);
template void indexed_gemm<double>(int64_t, MatrixView<const double>, const PackedB<double>&, MatrixView<double>,
                                   bool);

}  // namespace moh::cpu
