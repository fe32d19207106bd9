// Differentiable grouped row projections (core/ops.h: gather_linear, scatter_linear): one tape
// node per call, the fused backward kernels underneath. index/offsets are not differentiable.
#pragma once

#include "autograd/variable.h"

namespace moh::ag {

// out[r] = x[index[r]] @ w[g]^T + bias[g] for rows r of group g; bias may be undefined.
Variable gather_linear(const Variable& x, const Tensor& index, const Tensor& offsets, const Variable& w,
                       const Variable& bias);
// out [num_rows, Dout] with out[index[r]] += src[r] @ w[g]^T.
Variable scatter_linear(const Variable& src, const Tensor& index, const Tensor& offsets, const Variable& w,
                        int64_t num_rows);

}  // namespace moh::ag
