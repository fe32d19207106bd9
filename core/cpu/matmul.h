// CPU batched matrix multiply through OpenBLAS (sgemm/dgemm).
// Each operand's last two dims are handed to BLAS as they lie in memory: row-major (unit column
// stride) as NoTrans, column-major (unit row stride, e.g. a transposed view) as Trans, with the
// leading dimension taken from the other stride, so padded rows (sliced views) need no copy.
// Only a matrix that is neither (or has a zero stride on a non-singleton dim) is copied first.
#pragma once

#include "core/tensor.h"

namespace moh::cpu {

// out [..., M, N] (contiguous) = a [..., M, K] @ b [..., K, N], or out += a @ b with accumulate
// (BLAS beta = 1: no zeroing pass); a and b are already expanded to out's batch shape (stride 0 on
// broadcast batch dims); dtypes float32 or float64.
void matmul(const Tensor& out, const Tensor& a, const Tensor& b, bool accumulate = false);

}  // namespace moh::cpu
