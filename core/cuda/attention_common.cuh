// Pieces shared by the CUDA attention kernels (attention.cu: forward; attention_backward.cu:
// grad_q, then grad_k/grad_v): the group geometry that makes dense [B, H, T, *] and packed [R, *]
// queries one case, strided row addressing, warp reductions, shared-memory tiles and launches.
// Work layout: a query tile is kRowTile rows of one group, each warp owning kRowsPerWarp of them,
// while keys stream through shared memory kLaneTile at a time, lane j scoring key j (the key-side
// backward kernel swaps the roles: warps own keys, lanes score queries). Every sum runs in a fixed
// order (sequential loops, and xor-butterfly shuffles, which leave the same bits in every lane), so
// results are bitwise reproducible run to run; every output element has exactly one writer.
// Grouped-query attention: query head h reads K/V head h / kv_group in place; a grad_kv block owns
// a key tile of one (batch, K/V head) and walks the kv_group query heads sharing it in order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/cuda/dispatch.cuh"
#include "core/cuda/runtime.h"
#include "core/math/softmax_math.h"
#include "core/tensor.h"

namespace moh::cuda::attention_detail {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 4;
constexpr int kRowTile = kWarps * kRowsPerWarp;  // query rows of a forward/grad_q block, keys of a grad_kv block
constexpr int kLaneTile = 32;                    // keys (forward, grad_q) or queries (grad_kv) per streamed tile
constexpr int64_t kMaxHeadDim = 256;             // accumulator registers: kMaxHeadDim / 32 per row and lane
constexpr unsigned kFullMask = 0xffffffffu;

// The groups (one per batch x head, g = h * batch + b as in core/ops.h's packed form). Dense:
// group g's query rows are q[b, h, 0..tq) at positions i + shift (shift = tk - tq). Packed: rows
// [offsets[g], offsets[g + 1]) of q_rows at positions pos[r]. Query tiles: dense groups have
// tiles_per_group each; packed group g has tiles [tile_offsets[g], tile_offsets[g + 1]).
// kv_group query heads share each K/V head (1 without grouped-query attention).
struct Geometry {
  int64_t batch = 0, groups = 0, tq = 0, tk = 0, shift = 0, kv_group = 1;
  const int64_t* offsets = nullptr;       // packed only, device [G + 1]
  const int64_t* pos = nullptr;           // packed only, device [R]
  const int64_t* tile_offsets = nullptr;  // packed only, device [G + 1]
  int64_t tiles_per_group = 0;            // dense only
  bool causal = false;
};

// One group's coordinates: (b, h) for dense query-side operands, (b, kv) for k/v (kv = h / kv_group),
// the row index of its row 0 in the query-side operands (row0: packed offsets[g], dense 0) and in
// packed-row order (flat0: packed offsets[g], dense g * tq; the backward's delta buffer is indexed so).
struct Group {
  int64_t b = 0, h = 0, kv = 0, row0 = 0, flat0 = 0, rows = 0;
};

__device__ __forceinline__ int64_t clamp64(int64_t x, int64_t lo, int64_t hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

__device__ __forceinline__ Group group_of(const Geometry& geo, int64_t g) {
  Group grp;
  grp.b = g % geo.batch;
  grp.h = g / geo.batch;
  grp.kv = grp.h / geo.kv_group;
  if (geo.offsets) {
    grp.row0 = grp.flat0 = geo.offsets[g];
    grp.rows = geo.offsets[g + 1] - grp.row0;
  } else {
    grp.flat0 = g * geo.tq;
    grp.rows = geo.tq;
  }
  return grp;
}

// Number of keys query row i of the group attends (core/cpu/attention.cpp's key_limit).
__device__ __forceinline__ int64_t key_limit(const Geometry& geo, const Group& grp, int64_t i) {
  if (!geo.causal) return geo.tk;
  const int64_t position = geo.pos ? geo.pos[grp.row0 + i] : i + geo.shift;
  return clamp64(position + 1, 0, geo.tk);
}

// Keys the rows [q0, q0 + n) attend together: the largest of their limits (block-uniform).
__device__ __forceinline__ int64_t tile_key_end(const Geometry& geo, const Group& grp, int64_t q0, int n) {
  if (!geo.causal) return geo.tk;
  if (!geo.pos) return key_limit(geo, grp, q0 + n - 1);  // dense positions grow with the row
  int64_t end = 0;
  for (int i = 0; i < n; ++i) end = max(end, key_limit(geo, grp, q0 + i));
  return end;
}

struct QueryTile {
  int64_t g = 0, q0 = 0;  // group, first row within it
};

__device__ __forceinline__ QueryTile query_tile(const Geometry& geo, int64_t tile) {
  if (!geo.tile_offsets) return {tile / geo.tiles_per_group, (tile % geo.tiles_per_group) * kRowTile};
  int64_t lo = 0, hi = geo.groups;  // tile_offsets[lo] <= tile < tile_offsets[hi]; empty groups own no tile
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    if (geo.tile_offsets[mid] <= tile) lo = mid;
    else hi = mid;
  }
  return {lo, (tile - geo.tile_offsets[lo]) * kRowTile};
}

// Element (b, h, row, 0) of a [B, H, T, *] / [B, H, T] operand, or (row, 0) of packed [R, *] / [R]
// rows (sb = sh = 0).
template <class U>
struct Rows {
  U* data = nullptr;
  int64_t sb = 0, sh = 0, sr = 0;
  __device__ __forceinline__ U* at(int64_t b, int64_t h, int64_t row) const {
    return data + b * sb + h * sh + row * sr;
  }
};

template <class U>
Rows<U> rows_of(const Tensor& t) {
  Rows<U> r;
  r.data = static_cast<U*>(t.raw_data());
  if (t.dim() >= 3) {
    r.sb = t.stride(0);
    r.sh = t.stride(1);
    r.sr = t.stride(2);
  } else {
    r.sr = t.stride(0);
  }
  return r;
}

template <class A>
__device__ __forceinline__ A warp_sum(A x) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) x += __shfl_xor_sync(kFullMask, x, m);
  return x;
}

template <class A>
__device__ __forceinline__ A warp_max(A x) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    const A o = __shfl_xor_sync(kFullMask, x, m);
    x = o > x ? o : x;
  }
  return x;
}

template <class A>
__device__ __forceinline__ A neg_inf() {
  return A(-INFINITY);
}

template <class A>
__device__ __forceinline__ A acc_log(A x) {
  if constexpr (std::is_same_v<A, float>) return logf(x);
  else return ::log(x);
}

// Block-cooperative copy of `rows` x `cols` elements (source row stride `stride`, unit column
// stride) into shared `dst` (row stride ld) in the accumulator type; rows [valid, rows) become 0,
// so padding keys/queries contribute exact zeros.
template <class T, class A>
__device__ void load_tile(A* dst, int ld, const T* src, int64_t stride, int valid, int rows, int cols) {
  for (int e = threadIdx.x; e < rows * cols; e += blockDim.x) {
    const int r = e / cols, c = e - r * cols;
    dst[r * ld + c] = r < valid ? load_acc(src[r * stride + c]) : A(0);
  }
}

// s[r] = sum_c a[r * lda + c] * b[c]: the warp's kRowsPerWarp rows of `a` (same address in every
// lane: a shared-memory broadcast) against this lane's row `b`, in column order.
template <class A>
__device__ __forceinline__ void dot_rows(A (&s)[kRowsPerWarp], const A* a, int lda, const A* b, int n) {
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) s[r] = A(0);
#pragma unroll 4
  for (int c = 0; c < n; ++c) {
    const A bc = b[c];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) s[r] += a[r * lda + c] * bc;
  }
}

// acc[r][t] += sum_{j < n} w[r]@lane j * m[j * ldm + c] for this lane's columns c = lane + 32 t
// (c < cols): the weights one lane per streamed row, the rows in shared memory, summed in j order.
template <class A, int Slots>
__device__ __forceinline__ void accumulate(A (&acc)[kRowsPerWarp][Slots], const A (&w)[kRowsPerWarp], const A* m,
                                           int ldm, int cols, int n, int lane) {
  for (int j = 0; j < n; ++j) {
    A wj[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) wj[r] = __shfl_sync(kFullMask, w[r], j);
#pragma unroll
    for (int t = 0; t < Slots; ++t) {
      const int c = lane + 32 * t;
      if (c < cols) {
        const A x = m[j * ldm + c];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r) acc[r][t] += wj[r] * x;
      }
    }
  }
}

// Writes this lane's columns of one row: dst[c] = scale * acc[t], c = lane + 32 t < cols.
template <class T, class A, int Slots>
__device__ __forceinline__ void store_row(T* dst, const A (&acc)[Slots], A scale, int cols, int lane) {
#pragma unroll
  for (int t = 0; t < Slots; ++t) {
    const int c = lane + 32 * t;
    if (c < cols) dst[c] = store_acc<T>(acc[t] * scale);
  }
}

// ---------------------------------------------------------------- host side

// The query tiles to launch, one block each, and the geometry the kernels decode them with.
struct QueryWork {
  Geometry geo;
  Tensor tile_offsets;  // packed: keeps the device schedule alive until the kernels are queued
  int64_t tiles = 0;
};

inline QueryWork dense_work(const Tensor& q, const Tensor& k, bool causal) {
  QueryWork w;
  w.geo.batch = q.size(0);
  w.geo.groups = q.size(0) * q.size(1);
  w.geo.kv_group = q.size(1) / k.size(1);
  w.geo.tq = q.size(2);
  w.geo.tk = k.size(2);
  w.geo.shift = w.geo.tk - w.geo.tq;
  w.geo.tiles_per_group = (w.geo.tq + kRowTile - 1) / kRowTile;
  w.geo.causal = causal;
  w.tiles = w.geo.groups * w.geo.tiles_per_group;
  return w;
}

// Reads the G + 1 row offsets back to size each group's tiles and uploads their prefix sums.
inline QueryWork packed_work(const Tensor& row_offsets, const Tensor& q_pos, int64_t heads, const Tensor& k,
                             bool causal) {
  QueryWork w;
  w.geo.batch = k.size(0);
  w.geo.groups = k.size(0) * heads;
  w.geo.kv_group = heads / k.size(1);
  w.geo.tk = k.size(2);
  w.geo.offsets = row_offsets.data<int64_t>();
  w.geo.pos = q_pos.data<int64_t>();
  w.geo.causal = causal;
  const int device = k.device().index;
  const size_t bytes = size_t(w.geo.groups + 1) * sizeof(int64_t);
  std::vector<int64_t> offsets(size_t(w.geo.groups + 1)), tiles(size_t(w.geo.groups + 1), 0);
  copy_device_to_host(offsets.data(), w.geo.offsets, bytes, device);
  for (size_t g = 0; g + 1 < offsets.size(); ++g)
    tiles[g + 1] = tiles[g] + (offsets[g + 1] - offsets[g] + kRowTile - 1) / kRowTile;
  w.tiles = tiles.back();
  w.tile_offsets = Tensor::empty({w.geo.groups + 1}, DType::Int64, k.device());
  copy_host_to_device(w.tile_offsets.raw_data(), tiles.data(), bytes, device);
  w.geo.tile_offsets = w.tile_offsets.data<int64_t>();
  return w;
}

inline void check_head_dims(const char* op, int64_t d, int64_t dv) {
  MOH_CHECK(d <= kMaxHeadDim && dv <= kMaxHeadDim, op, ": the CUDA kernels take head dims up to ", kMaxHeadDim,
            ", got D = ", d, " and Dv = ", dv);
}

// Calls f.template operator()<Slots>() with the accumulator columns per lane (Slots * 32 >= dim).
template <class F>
void dispatch_slots(int64_t dim, F&& f) {
  if (dim <= 64) f.template operator()<2>();
  else if (dim <= 128) f.template operator()<4>();
  else f.template operator()<8>();
}

// Launches kernel<<<blocks, kThreads, smem>>> on the device's compute stream, first raising its
// dynamic shared memory limit (checked against the device's opt-in maximum).
template <class... Params, class... Args>
void launch(const char* op, const char* name, void (*kernel)(Params...), int64_t blocks, size_t smem, int device,
            Args&&... args) {
  if (blocks == 0) return;
  MOH_CHECK(blocks <= int64_t(INT32_MAX), op, ": ", blocks, " thread blocks exceed the grid limit");
  int limit = 0;
  MOH_CUDA_CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  MOH_CHECK(smem <= size_t(limit), op, ": these head dims need ", smem, " bytes of shared memory per block, cuda:",
            device, " allows ", limit);
  MOH_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  kernel<<<unsigned(blocks), kThreads, smem, compute_stream(device)>>>(std::forward<Args>(args)...);
  MOH_CUDA_CHECK_LAUNCH(name);
}

}  // namespace moh::cuda::attention_detail
