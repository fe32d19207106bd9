// Differentiable shape functions: views (reshape, view, flatten, permute, transpose, narrow,
// slice, select, squeeze, unsqueeze, expand), contiguous, and joining/splitting (cat, stack,
// split, chunk). Forward results are views exactly when the Tensor method gives a view.
// split/chunk return several outputs from one tape node; any subset of them may be used.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/variable.h"

namespace moh::ag {

Variable reshape(const Variable& x, const Shape& shape);
Variable view(const Variable& x, const Shape& shape);
Variable flatten(const Variable& x, int64_t start_dim = 0, int64_t end_dim = -1);
Variable permute(const Variable& x, const std::vector<int64_t>& dims);
Variable transpose(const Variable& x, int64_t d0, int64_t d1);
Variable narrow(const Variable& x, int64_t dim, int64_t start, int64_t length);
Variable slice(const Variable& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Variable select(const Variable& x, int64_t dim, int64_t index);
Variable squeeze(const Variable& x, int64_t dim);
Variable unsqueeze(const Variable& x, int64_t dim);
Variable expand(const Variable& x, const Shape& shape);
Variable contiguous(const Variable& x);

Variable cat(const std::vector<Variable>& xs, int64_t dim);
Variable stack(const std::vector<Variable>& xs, int64_t dim);
std::vector<Variable> split(const Variable& x, int64_t split_size, int64_t dim);
std::vector<Variable> split(const Variable& x, const std::vector<int64_t>& sizes, int64_t dim);
std::vector<Variable> chunk(const Variable& x, int64_t chunks, int64_t dim);

}  // namespace moh::ag
