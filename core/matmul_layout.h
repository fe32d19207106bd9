// How the backend GEMMs (core/cpu/matmul.cpp over CBLAS, core/cuda/matmul.cpp over cuBLASLt) read
// an operand's trailing [rows, cols] matrix in place: row-major (unit column stride) as is,
// column-major (unit row stride, e.g. a transposed view) as the transpose of the stored matrix,
// with the leading dimension taken from the other stride, so padded rows (sliced views) need no
// copy. Anything else (or a zero stride on a non-singleton matrix dim) is copied first.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/tensor.h"

namespace moh {

struct MatrixLayout {
  bool ok = false;          // false: the matrix must be copied (compact_matrices) first
  bool transposed = false;  // stored as the row-major transpose ([cols, rows])
  int64_t ld = 0;           // row stride of the stored matrix, in elements
};

inline MatrixLayout matrix_layout(const Tensor& t) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  const int64_t rs = t.stride(-2), cs = t.stride(-1);
  if ((cols == 1 || cs == 1) && (rows == 1 || rs >= std::max<int64_t>(1, cols)))
    return {true, false, rows == 1 ? std::max<int64_t>(1, cols) : rs};
  if ((rows == 1 || rs == 1) && (cols == 1 || cs >= std::max<int64_t>(1, rows)))
    return {true, true, cols == 1 ? std::max<int64_t>(1, rows) : cs};
  return {};
}

// A contiguous copy of t's matrices that keeps broadcast (stride-0) batch dims broadcast, so a
// shared operand is copied once rather than once per batch.
inline Tensor compact_matrices(const Tensor& t) {
  Shape unique_shape = t.shape();
  for (int64_t d = 0; d + 2 < t.dim(); ++d)
    if (t.strides()[size_t(d)] == 0) unique_shape[size_t(d)] = 1;
  const Tensor unique(t.storage(), unique_shape, t.strides(), t.offset(), t.dtype());
  Tensor c = Tensor::empty(unique_shape, t.dtype(), t.device());
  c.copy_(unique);
  return c.expand(t.shape());
}

}  // namespace moh
