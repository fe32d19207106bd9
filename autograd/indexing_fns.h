// Differentiable indexing: embedding (row lookup; backward is the deterministic
// embedding_backward scatter-add), gather / index_select (backward: scatter_add / index_add into
// zeros) and their adjoints scatter_add / index_add (differentiable in both x and src).
// Index tensors are int64 and carry no gradient.
#pragma once

#include <cstdint>

#include "autograd/variable.h"

namespace moh::ag {

Variable embedding(const Variable& weight, const Tensor& indices);
Variable gather(const Variable& x, int64_t dim, const Tensor& index);
Variable index_select(const Variable& x, int64_t dim, const Tensor& index);
Variable scatter_add(const Variable& x, int64_t dim, const Tensor& index, const Variable& src);
Variable index_add(const Variable& x, int64_t dim, const Tensor& index, const Variable& src);

}  // namespace moh::ag
