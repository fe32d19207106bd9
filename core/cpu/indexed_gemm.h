// A single-threaded GEMM whose operands may pick their rows through an index, so that grouped
// projections read gathered rows and add into scattered rows without copying them out first:
//   C = (accumulate ? C : 0) + A @ B,  A [m, k], B [k, n], C [m, n] as MatrixViews.
// Blocked like a BLAS GEMM (panels of A and B packed into cache-sized buffers, a register-tiled
// micro-kernel on explicit SIMD vectors), with the gather folded into the packing and the scatter
// into the write-back. Invariants: each element of C is its k products summed in ascending k order,
// so a row's bits do not depend on which rows share the call, where it is cut into tiles, or on the
// thread count of the caller; the rows of C a call writes must be distinct (an index may repeat a
// row only in A or B). Callers run calls in parallel on disjoint parts of C.
#pragma once

#include <cstdint>
#include <vector>

namespace moh::cpu {

// Element (i, j) at base[row(i) * row_stride + col(j) * col_stride], where row(i) = row_index ? row_index[i] : i
// and col(j) likewise. A transposed matrix is a view with row_stride 1; a transposed gathered matrix
// (X[index]^T) indexes its columns.
template <class T>
struct MatrixView {
  T* base = nullptr;
  int64_t row_stride = 0;
  int64_t col_stride = 1;
  const int64_t* row_index = nullptr;
  const int64_t* col_index = nullptr;

  int64_t row(int64_t i) const { return row_index ? row_index[i] : i; }
  int64_t col(int64_t j) const { return col_index ? col_index[j] : j; }
  T& at(int64_t i, int64_t j) const { return base[row(i) * row_stride + col(j) * col_stride]; }
};

// A must be read along k with unit stride: either by rows (col_stride 1, no column index) or, for a
// transposed A, by columns (row_stride 1, no row index). B and C take any view.
template <class T>
void indexed_gemm(int64_t m, int64_t n, int64_t k, MatrixView<const T> a, MatrixView<const T> b, MatrixView<T> c,
                  bool accumulate);

// B's k x n block packed once in the micro-kernel's layout, for products that share it (one weight block
// against several row ranges of A). n is at most kPackedBWidth; k any.
constexpr int64_t kPackedBWidth = 256;
template <class T>
class PackedB {
 public:
  void pack(MatrixView<const T> b, int64_t k, int64_t n);
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  const T* data() const { return data_.data(); }

 private:
  std::vector<T> data_;
  int64_t k_ = 0, n_ = 0;
};

// C = (accumulate ? C : 0) + A @ B with B packed, A [m, b.k()] read by rows: the same bits as the call that
// packs B itself.
template <class T>
void indexed_gemm(int64_t m, MatrixView<const T> a, const PackedB<T>& b, MatrixView<T> c, bool accumulate);

}  // namespace moh::cpu
