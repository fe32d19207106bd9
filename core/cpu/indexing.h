// CPU indexing kernels: index range checks, gather/scatter along a dim (index_select and index_add
// are gathers/scatters with an expanded index), top-k along the last dim and one_hot.
// Invariants: index tensors are int64 and were range-checked by check_index_range before any
// kernel reads through them; scatter writes are race-free and deterministic (each output line is
// owned by one thread, and duplicates along the dim apply in index order: last write wins, adds
// accumulate in order).
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace moh::cpu {

// Throws "<op>: <name>[i, j] = v is out of range [0, limit) for <what>" at the first (row-major)
// index outside [0, limit).
void check_index_range(const Tensor& index, int64_t limit, const char* op, const char* name,
                       const std::string& what);

// out (index's shape) [p] = x[p with coordinate dim replaced by index[p]]; x and index have equal
// rank and index.size(d) <= x.size(d) for d != dim.
void gather(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index);

// out[p with coordinate dim replaced by index[p]] = src[p] (or += when accumulate) for every
// position p of index; out already holds the copy of x to write into.
void scatter(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, bool accumulate);

// values/indices [..., k] (contiguous) = the k largest (or smallest) entries of each row of x's last
// dim, sorted; ties keep the lower index first; NaN ranks above every number (as in PyTorch).
void topk(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t k, bool largest);

// out [..., num_classes] (contiguous, any dtype) = 1 at the class of each index, 0 elsewhere.
void one_hot(const Tensor& out, const Tensor& indices);

}  // namespace moh::cpu
