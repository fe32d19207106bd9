// Deterministic grouping of index positions by value, for the CUDA kernels that sum many source
// rows into one output row (embedding_backward, index_add) without atomics: each output row reads
// the positions that select it, in ascending order, so sums have the CPU's order and bits.
// Invariants: index values lie in [0, rows) (the caller range-checked them); the grouping is a
// stable radix sort of (value, position) pairs, so equal values keep ascending positions.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh::cuda {

struct IndexGroups {
  Tensor order;  // int64 [n]: positions 0..n-1 sorted by (index[p], p)
  Tensor start;  // int64 [rows + 1]: the positions holding value v are order[start[v] .. start[v + 1])
};

// Groups the positions of the 1-D int64 `index` (any stride, on a CUDA device) by value. Queued on
// the device's compute stream; nothing is read back to the host.
IndexGroups group_positions(const Tensor& index, int64_t rows);

}  // namespace moh::cuda
