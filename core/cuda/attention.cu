// CUDA forward of blocked attention (core/cpu/attention.cpp's twin), dense and packed queries:
// one block per query tile of one group streams the keys its rows attend through shared memory,
// folds each key tile into a running (max, sum) per row with the online softmax of the CPU kernel
// (softmax_exp, so float32 uses the same exp as the CPU) and accumulates P @ V in registers, in
// float (double for float64). Rows that see no key (causal, Tk < Tq) get out = 0 and lse = -inf,
// as on the CPU. Layout and reproducibility notes: core/cuda/attention_common.cuh.
#include "core/kernels/attention.h"
#include "core/cuda/attention_common.cuh"

namespace moh::cuda {
namespace {

using namespace attention_detail;

// Shared memory: q tile [kRowTile][d], k tile [kLaneTile][d + 1] (padded: lanes read rows),
// v tile [kLaneTile][dv].
template <class A>
size_t forward_smem(int d, int dv) {
  return sizeof(A) * size_t(kRowTile * d + kLaneTile * (d + 1) + kLaneTile * dv);
}

template <class T, int Slots>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(Geometry geo, Rows<const T> q, Rows<const T> k, Rows<const T> v, Rows<T> out,
                   Rows<acc_t<T>> lse, int d, int dv, acc_t<T> scale) {
  using A = acc_t<T>;
  extern __shared__ __align__(16) unsigned char smem[];
  A* qs = reinterpret_cast<A*>(smem);
  A* ks = qs + kRowTile * d;
  A* vs = ks + kLaneTile * (d + 1);
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  const QueryTile tile = query_tile(geo, blockIdx.x);
  const Group grp = group_of(geo, tile.g);
  const int n = int(min(int64_t(kRowTile), grp.rows - tile.q0));
  load_tile(qs, d, q.at(grp.b, grp.h, grp.row0 + tile.q0), q.sr, n, kRowTile, d);

  int64_t limit[kRowsPerWarp];
  A row_max[kRowsPerWarp], row_sum[kRowsPerWarp], acc[kRowsPerWarp][Slots];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = warp * kRowsPerWarp + r;
    limit[r] = row < n ? key_limit(geo, grp, tile.q0 + row) : 0;
    row_max[r] = neg_inf<A>();
    row_sum[r] = A(0);
#pragma unroll
    for (int t = 0; t < Slots; ++t) acc[r][t] = A(0);
  }
  const A* q_warp = qs + warp * kRowsPerWarp * d;
  const int64_t key_end = tile_key_end(geo, grp, tile.q0, n);
  for (int64_t k0 = 0; k0 < key_end; k0 += kLaneTile) {
    const int kn = int(min(int64_t(kLaneTile), key_end - k0));
    __syncthreads();  // the previous tile is consumed (and, first time round, the q tile is stored)
    load_tile(ks, d + 1, k.at(grp.b, grp.kv, k0), k.sr, kn, kLaneTile, d);
    load_tile(vs, dv, v.at(grp.b, grp.kv, k0), v.sr, kn, kLaneTile, dv);
    __syncthreads();
    const int64_t key = k0 + lane;
    bool any = false;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) any |= key < limit[r];
    if (!__any_sync(kFullMask, any)) continue;  // none of this warp's rows sees these keys

    A s[kRowsPerWarp], p[kRowsPerWarp];
    dot_rows(s, q_warp, d, ks + lane * (d + 1), d);
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const bool valid = key < limit[r];
      const A score = valid ? s[r] * scale : neg_inf<A>();
      const A tile_max = warp_max(score);
      p[r] = A(0);
      if (tile_max == neg_inf<A>()) continue;  // warp-uniform: no key of the tile is visible to row r
      const A new_max = row_max[r] > tile_max ? row_max[r] : tile_max;
      p[r] = valid ? softmax_exp(score - new_max) : A(0);
      const A correction = row_max[r] == neg_inf<A>() ? A(0) : softmax_exp(row_max[r] - new_max);
      row_sum[r] = row_sum[r] * correction + warp_sum(p[r]);
      row_max[r] = new_max;
#pragma unroll
      for (int t = 0; t < Slots; ++t) acc[r][t] *= correction;
    }
    accumulate(acc, p, vs, dv, dv, kn, lane);
  }

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = warp * kRowsPerWarp + r;
    if (row >= n) continue;
    const int64_t i = grp.row0 + tile.q0 + row;
    const bool seen = row_sum[r] != A(0);  // false when no key is visible (causal row before the first key)
    store_row(out.at(grp.b, grp.h, i), acc[r], seen ? A(1) / row_sum[r] : A(0), dv, lane);
    if (lane == 0) *lse.at(grp.b, grp.h, i) = seen ? row_max[r] + acc_log(row_sum[r]) : neg_inf<A>();
  }
}

void run_forward(const char* op, const QueryWork& work, const Tensor& out, const Tensor& lse, const Tensor& q,
                 const Tensor& k, const Tensor& v, double scale) {
  const int64_t d = q.size(-1), dv = v.size(-1);
  check_head_dims(op, d, dv);
  dispatch_math_float(q.dtype(), op, [&]<class T>() {
    using A = acc_t<T>;
    MOH_CHECK(lse.dtype() == dtype_of<A>, op, ": lse must be ", dtype_name(dtype_of<A>), ", got ", describe(lse));
    dispatch_slots(std::max(d, dv), [&]<int Slots>() {
      launch(op, "attention forward", forward_kernel<T, Slots>, work.tiles, forward_smem<A>(int(d), int(dv)),
             q.device().index, work.geo, rows_of<const T>(q), rows_of<const T>(k), rows_of<const T>(v),
             rows_of<T>(out), rows_of<A>(lse), int(d), int(dv), A(scale));
    });
  });
}

}  // namespace

void attention(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v, double scale,
               bool causal) {
  DeviceGuard guard(q.device().index);
  run_forward("attention", dense_work(q, k, causal), out, lse, q, k, v, scale);
}

void attention_packed(const Tensor& out, const Tensor& lse, const Tensor& q_rows, const Tensor& row_offsets,
                      const Tensor& q_pos, int64_t heads, const Tensor& k, const Tensor& v, double scale,
                      bool causal) {
  DeviceGuard guard(q_rows.device().index);
  run_forward("attention_packed", packed_work(row_offsets, q_pos, heads, k, causal), out, lse, q_rows, k, v, scale);
}

}  // namespace moh::cuda
