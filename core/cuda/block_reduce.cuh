// Deterministic warp / block / tile reductions and the row loop shared by the CUDA reduction,
// softmax, norm and cross-entropy kernels. Every reduction combines values in a fixed tree order
// that depends only on the launch shape (no atomics), so results are bitwise reproducible run to
// run. `merge(a, b)` folds b into a in place (a += b, SoftmaxState::merge, ...); the all-reduces
// hand the same result to every participating thread. Values are any trivially copyable type
// whose size is a multiple of 4 bytes (shuffled word by word).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "core/cuda/launch.cuh"

namespace moh::cuda {

constexpr int kWarp = 32;
constexpr int64_t kWarpRowMax = 1024;  // rows up to this length get a warp, longer ones the block

// Two sums reduced together (a row's sum and sum of squares, sum gy and sum gy * xhat, ...).
template <class A>
struct Pair {
  A a, b;
  __device__ Pair& operator+=(const Pair& o) {
    a += o.a;
    b += o.b;
    return *this;
  }
};

// Shared scratch for kCount values of V (types with default member initialisers, such as
// SoftmaxState, cannot be __shared__ variables themselves). One buffer per (V, kCount).
template <class V, int kCount>
__device__ __forceinline__ V* shared_scratch() {
  __shared__ alignas(16) unsigned char raw[kCount * sizeof(V)];
  return reinterpret_cast<V*>(raw);
}

// The common merges.
struct Add {
  template <class V>
  __device__ void operator()(V& a, const V& b) const {
    a += b;
  }
};
struct Max {
  template <class V>
  __device__ void operator()(V& a, const V& b) const {
    a = b > a ? b : a;
  }
};

template <class V>
__device__ __forceinline__ V shfl_xor(const V& v, int mask) {
  static_assert(sizeof(V) % 4 == 0, "shfl_xor shuffles 32-bit words");
  constexpr int kWords = int(sizeof(V) / 4);
  unsigned w[kWords];
  memcpy(w, &v, sizeof(V));
#pragma unroll
  for (int k = 0; k < kWords; ++k) w[k] = __shfl_xor_sync(0xffffffffu, w[k], mask);
  V r;
  memcpy(&r, w, sizeof(V));
  return r;
}

// Butterfly over the full warp (all 32 lanes must call it). Each step merges lane i with lane
// i ^ mask; merge(a, b) and merge(b, a) agree for commutative merges, so every lane ends equal.
template <class V, class Merge>
__device__ __forceinline__ V warp_allreduce(V v, Merge merge) {
#pragma unroll
  for (int mask = kWarp / 2; mask > 0; mask >>= 1) merge(v, shfl_xor(v, mask));
  return v;
}

// Whole-block all-reduce (every thread of the block must call it): warps reduce, then every
// thread folds the per-warp results in warp order.
template <class V, class Merge>
__device__ __forceinline__ V block_allreduce(V v, Merge merge) {
  V* smem = shared_scratch<V, kBlockThreads / kWarp>();
  v = warp_allreduce(v, merge);
  if (threadIdx.x % kWarp == 0) smem[threadIdx.x / kWarp] = v;
  __syncthreads();
  V r = smem[0];
  for (int w = 1; w < int(blockDim.x) / kWarp; ++w) merge(r, smem[w]);
  __syncthreads();  // the scratch may be written by the next call
  return r;
}

// All-reduce over the G threads that share a row (G = kWarp or kBlockThreads, see for_each_row).
template <int G, class V, class Merge>
__device__ __forceinline__ V group_allreduce(V v, Merge merge) {
  static_assert(G == kWarp || G == kBlockThreads, "a row is handled by a warp or by the block");
  if constexpr (G == kWarp)
    return warp_allreduce(v, merge);
  else
    return block_allreduce(v, merge);
}

// Grid-stride loop over `rows` with G threads per row: G = kWarp gives each warp its own rows (8
// per block), G = kBlockThreads gives each block one row at a time. body(row, lane) with lane in
// [0, G). The loop is uniform across each group, so the body may call group_allreduce<G>.
// Launch with kBlockThreads threads and row_grid<G>(rows) blocks.
template <int G, class Body>
__device__ __forceinline__ void for_each_row(int64_t rows, Body&& body) {
  constexpr int kRowsPerBlock = kBlockThreads / G;
  const int lane = int(threadIdx.x) % G;
  for (int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + int(threadIdx.x) / G; row < rows;
       row += int64_t(gridDim.x) * kRowsPerBlock)
    body(row, lane);
}

template <int G>
inline unsigned row_grid(int64_t rows) {
  return grid_for(rows, kBlockThreads / G);
}

// A block laid out as tx in [0, tx_count) columns by ty in [0, ty_count) partners per column
// (tx_count * ty_count = kBlockThreads, ty_count a power of two). Folds the ty_count values of
// each column with a fixed shared-memory tree and returns the column's result to all its
// threads. Every thread of the block must call it.
template <class V, class Merge>
__device__ __forceinline__ V tile_allreduce(V v, int tx, int ty, int ty_count, Merge merge) {
  V* smem = shared_scratch<V, kBlockThreads>();
  V* col = smem + tx * ty_count;
  col[ty] = v;
  __syncthreads();
  for (int s = ty_count / 2; s > 0; s >>= 1) {
    if (ty < s) merge(col[ty], col[ty + s]);
    __syncthreads();
  }
  const V r = col[0];
  __syncthreads();  // the scratch may be written by the next call
  return r;
}

// Smallest power of two >= n, capped at `cap` (a power of two).
inline int pow2_at_least(int64_t n, int cap) {
  int p = 1;
  while (p < cap && p < n) p *= 2;
  return p;
}

}  // namespace moh::cuda
