// The CPU engine for elementwise work over strided, broadcast operands.
// StridedIter<N> takes one logical shape and N operands' element strides, drops size-1 dims and
// merges dims that are contiguous in every operand, so a contiguous tensor becomes a single run.
// for_each_run() walks the outer dims (in parallel across the OpenMP pool when the work is
// large) and hands each innermost run to a kernel as N byte pointers, N byte strides and a length.
// Invariant: operand 0 is the output whenever the kernel writes; runs never overlap in operand 0.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "core/shape.h"

namespace moh::cpu {

inline constexpr int64_t kParallelGrain = 32768;  // elements per thread below which we stay serial

template <int N>
struct StridedIter {
  Shape shape;                                    // coalesced, innermost last
  std::array<std::vector<int64_t>, N> strides;    // element strides per operand, coalesced

  StridedIter(const Shape& full_shape, const std::array<std::vector<int64_t>, N>& full_strides) {
    for (size_t d = 0; d < full_shape.size(); ++d) {
      if (full_shape[d] == 1) continue;
      bool merge = !shape.empty();
      for (int k = 0; k < N && merge; ++k)
        merge = strides[k].back() == full_strides[k][d] * full_shape[d];
      if (merge) {
        shape.back() *= full_shape[d];
        for (int k = 0; k < N; ++k) strides[k].back() = full_strides[k][d];
      } else {
        shape.push_back(full_shape[d]);
        for (int k = 0; k < N; ++k) strides[k].push_back(full_strides[k][d]);
      }
    }
    if (shape.empty()) {  // 0-d or all-ones: a single element
      shape.push_back(1);
      for (int k = 0; k < N; ++k) strides[k].push_back(0);
    }
  }

  int64_t numel() const { return shape_numel(shape); }
};

// kernel(std::array<char*, N> ptrs, std::array<int64_t, N> byte_strides, int64_t n)
template <int N, class Kernel>
void for_each_run(const StridedIter<N>& it, std::array<char*, N> base, std::array<int64_t, N> elem_size,
                  Kernel&& kernel) {
  const int64_t nd = int64_t(it.shape.size());
  const int64_t inner = it.shape.back();
  const int64_t outer = it.numel() / (inner == 0 ? 1 : inner);
  if (inner == 0 || outer == 0) return;
  std::array<int64_t, N> inner_stride;
  for (int k = 0; k < N; ++k) inner_stride[k] = it.strides[k].back() * elem_size[k];

  // Rows [begin, end): `begin` decomposed into an outer multi-index once; then the second-innermost dim
  // steps every pointer by its stride and the others carry like an odometer, adding their byte strides.
  auto run_rows = [&](int64_t begin, int64_t end) {
    const int64_t outer_dims = nd > 1 ? nd - 1 : 0;
    std::vector<int64_t> idx(size_t(outer_dims), 0);
    std::array<char*, N> ptrs = base;
    int64_t rem = begin;
    for (int64_t d = outer_dims - 1; d >= 0; --d) {
      idx[size_t(d)] = rem % it.shape[size_t(d)];
      rem /= it.shape[size_t(d)];
      for (int k = 0; k < N; ++k) ptrs[k] += idx[size_t(d)] * it.strides[k][size_t(d)] * elem_size[k];
    }
    const int64_t last = outer_dims - 1;  // the dim stepped fastest (none when the tensor is one run)
    const int64_t last_size = last >= 0 ? it.shape[size_t(last)] : 1;
    std::array<int64_t, N> step{};
    if (last >= 0)
      for (int k = 0; k < N; ++k) step[k] = it.strides[k][size_t(last)] * elem_size[k];
    for (int64_t row = begin; row < end;) {
      // The rest of the current line of the second-innermost dim, then one carry into the dims above it.
      const int64_t line = std::min(end - row, last_size - (last >= 0 ? idx[size_t(last)] : 0));
      for (int64_t r = 0; r < line; ++r) {
        kernel(ptrs, inner_stride, inner);
        for (int k = 0; k < N; ++k) ptrs[k] += step[k];
      }
      row += line;
      if (row == end || last < 0) break;
      for (int k = 0; k < N; ++k) ptrs[k] -= last_size * step[k];
      idx[size_t(last)] = 0;
      for (int64_t d = last - 1; d >= 0; --d) {
        if (++idx[size_t(d)] < it.shape[size_t(d)]) {
          for (int k = 0; k < N; ++k) ptrs[k] += it.strides[k][size_t(d)] * elem_size[k];
          break;
        }
        for (int k = 0; k < N; ++k) ptrs[k] -= (it.shape[size_t(d)] - 1) * it.strides[k][size_t(d)] * elem_size[k];
        idx[size_t(d)] = 0;
      }
    }
  };

  const int64_t total = outer * inner;
  if (total < 2 * kParallelGrain || outer == 1) {
    if (outer == 1 && total >= 2 * kParallelGrain) {
      // One long run: split it into chunks across threads.
      const int64_t chunks = (total + kParallelGrain - 1) / kParallelGrain;
#pragma omp parallel for schedule(static)
      for (int64_t c = 0; c < chunks; ++c) {
        int64_t start = c * kParallelGrain;
        int64_t len = std::min(kParallelGrain, total - start);
        std::array<char*, N> ptrs;
        for (int k = 0; k < N; ++k) ptrs[k] = base[k] + start * inner_stride[k];  // outer index 0
        kernel(ptrs, inner_stride, len);
      }
      return;
    }
    run_rows(0, outer);
    return;
  }
  const int64_t rows_per_chunk = std::max<int64_t>(1, kParallelGrain / inner);
  const int64_t chunks = (outer + rows_per_chunk - 1) / rows_per_chunk;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t begin = c * rows_per_chunk;
    run_rows(begin, std::min(outer, begin + rows_per_chunk));
  }
}

}  // namespace moh::cpu
