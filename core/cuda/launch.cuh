// Launch shapes and strided addressing shared by the CUDA kernel files.
// StridedOffsets<N> maps a linear element index of a shape to element offsets in N tensors
// (output first), after merging dims that are contiguous in all of them, so the common cases
// (contiguous, broadcast scalar, transposed last two dims) cost one or two divisions per element.
// Offsets count elements, never bytes. Kernels use grid-stride loops, so any grid size is valid.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <vector>

#include "core/cuda/runtime.h"
#include "core/tensor.h"

namespace moh::cuda {

constexpr int kBlockThreads = 256;
constexpr int kMaxDims = 10;

// Blocks for a grid-stride loop over n items: enough to fill the device, never more than needed.
inline unsigned grid_for(int64_t n, int threads = kBlockThreads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return unsigned(blocks < 1 ? 1 : (blocks > 65536 ? 65536 : blocks));
}

// The compute stream of the tensor's device, with that device made current for the launch.
inline cudaStream_t stream_for(const Tensor& t) { return compute_stream(t.device().index); }

template <int N>
struct StridedOffsets {
  int ndim = 0;
  int64_t sizes[kMaxDims];            // innermost last
  int64_t strides[N][kMaxDims];

  __host__ __device__ void offsets(int64_t linear, int64_t (&out)[N]) const {
    for (int k = 0; k < N; ++k) out[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t i = linear % sizes[d];
      linear /= sizes[d];
      for (int k = 0; k < N; ++k) out[k] += i * strides[k][d];
    }
  }
};

// Builds the addressing for `shape` over N stride lists (one per tensor, each of the shape's rank;
// broadcast inputs have stride 0). Dims of size 1 are dropped and neighbours that are contiguous in
// every tensor merge; throws when more than kMaxDims dims remain.
template <int N>
StridedOffsets<N> strided_offsets(const Shape& shape, const std::array<const std::vector<int64_t>*, N>& of) {
  StridedOffsets<N> s;
  std::vector<int64_t> sizes;
  std::array<std::vector<int64_t>, N> strides;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = !sizes.empty();
    for (int k = 0; k < N && merge; ++k) merge = strides[k].back() == (*of[k])[d] * shape[d];
    if (merge) {
      sizes.back() *= shape[d];
      for (int k = 0; k < N; ++k) strides[k].back() = (*of[k])[d];
    } else {
      sizes.push_back(shape[d]);
      for (int k = 0; k < N; ++k) strides[k].push_back((*of[k])[d]);
    }
  }
  MOH_CHECK(sizes.size() <= size_t(kMaxDims), "CUDA kernels address at most ", kMaxDims,
            " non-mergeable dims, got a tensor of shape ", shape);
  s.ndim = int(sizes.size());
  for (int d = 0; d < s.ndim; ++d) {
    s.sizes[d] = sizes[size_t(d)];
    for (int k = 0; k < N; ++k) s.strides[k][d] = strides[k][size_t(d)];
  }
  return s;
}

// The same over tensors of `shape` (expand broadcast inputs first).
template <int N>
StridedOffsets<N> strided_offsets(const Shape& shape, const std::array<const Tensor*, N>& tensors) {
  std::array<const std::vector<int64_t>*, N> of;
  for (int k = 0; k < N; ++k) of[k] = &tensors[k]->strides();
  return strided_offsets<N>(shape, of);
}

}  // namespace moh::cuda
