// CUDA backward of blocked attention (core/cpu/attention.cpp's twin), dense and packed queries,
// FlashAttention-style: probabilities are recomputed from q, k and the saved lse. Two kernels, no
// atomics: grad_q_kernel owns a query tile (the forward's layout), writes delta_i = dO_i . O_i to a
// scratch buffer and accumulates dQ = scale dS K over the keys its rows see; grad_kv_kernel then
// owns a key tile of one (batch, K/V head) and loops over the queries of every query head reading
// it (grouped-query attention: kv_group heads, ascending; all packed rows of each group),
// accumulating dV = P^T dO and dK = scale dS^T Q in registers: the group's sum has one writer.
// dS = P * (dO V^T - delta). Keys no query sees get zero gradients, as on the CPU (which
// zero-fills first). Layout: core/cuda/attention_common.cuh.
#include "core/cuda/attention_common.cuh"
#include "core/kernels/attention.h"

namespace moh::cuda {
namespace {

using namespace attention_detail;

// Shared memory: q tile [kRowTile][d], dO tile [kRowTile][dv], k tile [kLaneTile][d + 1],
// v tile [kLaneTile][dv + 1] (padded: lanes read rows of k and v).
template <class A>
size_t grad_q_smem(int d, int dv) {
  return sizeof(A) * size_t(kRowTile * (d + dv) + kLaneTile * (d + 1 + dv + 1));
}

template <class T, int Slots>
__global__ void __launch_bounds__(kThreads)
    grad_q_kernel(Geometry geo, Rows<const T> q, Rows<const T> k, Rows<const T> v, Rows<const T> out,
                  Rows<const T> grad_out, Rows<const acc_t<T>> lse, Rows<T> grad_q, acc_t<T>* delta, int d, int dv,
                  acc_t<T> scale) {
  using A = acc_t<T>;
  extern __shared__ __align__(16) unsigned char smem[];
  A* qs = reinterpret_cast<A*>(smem);
  A* gos = qs + kRowTile * d;
  A* ks = gos + kRowTile * dv;
  A* vs = ks + kLaneTile * (d + 1);
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  const QueryTile tile = query_tile(geo, blockIdx.x);
  const Group grp = group_of(geo, tile.g);
  const int n = int(min(int64_t(kRowTile), grp.rows - tile.q0));
  load_tile(qs, d, q.at(grp.b, grp.h, grp.row0 + tile.q0), q.sr, n, kRowTile, d);
  load_tile(gos, dv, grad_out.at(grp.b, grp.h, grp.row0 + tile.q0), grad_out.sr, n, kRowTile, dv);
  __syncthreads();

  int64_t limit[kRowsPerWarp];
  A row_lse[kRowsPerWarp], row_delta[kRowsPerWarp], dq[kRowsPerWarp][Slots];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = warp * kRowsPerWarp + r;
    const int64_t i = tile.q0 + row;
    limit[r] = 0;
    row_lse[r] = A(0);
    A dot = A(0);
    if (row < n) {
      limit[r] = key_limit(geo, grp, i);
      row_lse[r] = *lse.at(grp.b, grp.h, grp.row0 + i);
      const T* o = out.at(grp.b, grp.h, grp.row0 + i);
      for (int c = lane; c < dv; c += 32) dot += gos[row * dv + c] * load_acc(o[c]);
    }
    row_delta[r] = warp_sum(dot);
    if (row < n && lane == 0) delta[grp.flat0 + i] = row_delta[r];
#pragma unroll
    for (int t = 0; t < Slots; ++t) dq[r][t] = A(0);
  }
  const A* q_warp = qs + warp * kRowsPerWarp * d;
  const A* go_warp = gos + warp * kRowsPerWarp * dv;
  const int64_t key_end = tile_key_end(geo, grp, tile.q0, n);
  for (int64_t k0 = 0; k0 < key_end; k0 += kLaneTile) {
    const int kn = int(min(int64_t(kLaneTile), key_end - k0));
    __syncthreads();
    load_tile(ks, d + 1, k.at(grp.b, grp.kv, k0), k.sr, kn, kLaneTile, d);
    load_tile(vs, dv + 1, v.at(grp.b, grp.kv, k0), v.sr, kn, kLaneTile, dv);
    __syncthreads();
    const int64_t key = k0 + lane;
    bool any = false;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) any |= key < limit[r];
    if (!__any_sync(kFullMask, any)) continue;

    A s[kRowsPerWarp], dp[kRowsPerWarp], ds[kRowsPerWarp];
    dot_rows(s, q_warp, d, ks + lane * (d + 1), d);
    dot_rows(dp, go_warp, dv, vs + lane * (dv + 1), dv);
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const A p = key < limit[r] ? softmax_exp(s[r] * scale - row_lse[r]) : A(0);
      ds[r] = p * (dp[r] - row_delta[r]);
    }
    accumulate(dq, ds, ks, d + 1, d, kn, lane);
  }

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = warp * kRowsPerWarp + r;
    if (row < n) store_row(grad_q.at(grp.b, grp.h, grp.row0 + tile.q0 + row), dq[r], scale, d, lane);
  }
}

// Shared memory: per streamed query its key limit (int64), lse and delta; the block's k rows
// [kRowTile][d] and v rows [kRowTile][dv]; q tile [kLaneTile][d + 1] and dO tile [kLaneTile][dv + 1]
// (padded: lanes read rows of q and dO).
template <class A>
size_t grad_kv_smem(int d, int dv) {
  return sizeof(int64_t) * kLaneTile + sizeof(A) * size_t(2 * kLaneTile + kRowTile * (d + dv) +
                                                          kLaneTile * (d + 1 + dv + 1));
}

template <class T, int Slots>
__global__ void __launch_bounds__(kThreads)
    grad_kv_kernel(Geometry geo, int64_t key_tiles, Rows<const T> q, Rows<const T> k, Rows<const T> v,
                   Rows<const T> grad_out, Rows<const acc_t<T>> lse, const acc_t<T>* delta, Rows<T> grad_k,
                   Rows<T> grad_v, int d, int dv, acc_t<T> scale) {
  using A = acc_t<T>;
  extern __shared__ __align__(16) unsigned char smem[];
  int64_t* limits = reinterpret_cast<int64_t*>(smem);
  A* lses = reinterpret_cast<A*>(limits + kLaneTile);
  A* deltas = lses + kLaneTile;
  A* ks = deltas + kLaneTile;
  A* vs = ks + kRowTile * d;
  A* qs = vs + kRowTile * dv;
  A* gos = qs + kLaneTile * (d + 1);
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
  const int64_t unit = int64_t(blockIdx.x) / key_tiles;  // K/V head kv of batch row b: unit = kv * batch + b
  const int64_t b = unit % geo.batch, kv = unit / geo.batch;
  const int64_t k0 = (int64_t(blockIdx.x) % key_tiles) * kRowTile;
  const int kn = int(min(int64_t(kRowTile), geo.tk - k0));
  load_tile(ks, d, k.at(b, kv, k0), k.sr, kn, kRowTile, d);
  load_tile(vs, dv, v.at(b, kv, k0), v.sr, kn, kRowTile, dv);

  A dk[kRowsPerWarp][Slots], dv_acc[kRowsPerWarp][Slots];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
    for (int t = 0; t < Slots; ++t) dk[r][t] = dv_acc[r][t] = A(0);
  const A* k_warp = ks + warp * kRowsPerWarp * d;
  const A* v_warp = vs + warp * kRowsPerWarp * dv;
  const int64_t key0 = k0 + warp * kRowsPerWarp;  // this warp's first key
  for (int64_t j = 0; j < geo.kv_group; ++j) {  // the query heads reading this K/V head, ascending
    const Group grp = group_of(geo, (kv * geo.kv_group + j) * geo.batch + b);
    // Dense causal rows before k0 - shift see none of these keys; packed positions follow no order.
    const int64_t first = geo.causal && !geo.pos ? clamp64(k0 - geo.shift, 0, grp.rows) : 0;
    for (int64_t i0 = first; i0 < grp.rows; i0 += kLaneTile) {
      const int qn = int(min(int64_t(kLaneTile), grp.rows - i0));
      __syncthreads();  // the previous query tile is consumed (and, first time round, k/v are stored)
      bool sees = false;
      if (int(threadIdx.x) < kLaneTile) {
        const int t = int(threadIdx.x);
        int64_t lim = 0;
        A l = A(0), dl = A(0);
        if (t < qn) {
          lim = key_limit(geo, grp, i0 + t);
          l = *lse.at(grp.b, grp.h, grp.row0 + i0 + t);
          dl = delta[grp.flat0 + i0 + t];
        }
        limits[t] = lim;
        lses[t] = l;
        deltas[t] = dl;
        sees = lim > k0;
      }
      if (!__syncthreads_or(sees)) continue;  // no query of the tile sees any key of the block
      load_tile(qs, d + 1, q.at(grp.b, grp.h, grp.row0 + i0), q.sr, qn, kLaneTile, d);
      load_tile(gos, dv + 1, grad_out.at(grp.b, grp.h, grp.row0 + i0), grad_out.sr, qn, kLaneTile, dv);
      __syncthreads();
      const int64_t lim = limits[lane];
      if (!__any_sync(kFullMask, key0 < lim)) continue;  // the warp's first key is its earliest

      A s[kRowsPerWarp], dp[kRowsPerWarp], p[kRowsPerWarp], ds[kRowsPerWarp];
      dot_rows(s, k_warp, d, qs + lane * (d + 1), d);
      dot_rows(dp, v_warp, dv, gos + lane * (dv + 1), dv);
      const A row_lse = lses[lane], row_delta = deltas[lane];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        p[r] = key0 + r < lim ? softmax_exp(s[r] * scale - row_lse) : A(0);
        ds[r] = p[r] * (dp[r] - row_delta);
      }
      accumulate(dv_acc, p, gos, dv + 1, dv, qn, lane);
      accumulate(dk, ds, qs, d + 1, d, qn, lane);
    }
  }

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int row = warp * kRowsPerWarp + r;
    if (row >= kn) continue;
    store_row(grad_k.at(b, kv, k0 + row), dk[r], scale, d, lane);
    store_row(grad_v.at(b, kv, k0 + row), dv_acc[r], A(1), dv, lane);
  }
}

void run_backward(const char* op, const QueryWork& work, const Tensor& grad_q, const Tensor& grad_k,
                  const Tensor& grad_v, const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                  const Tensor& out, const Tensor& lse, double scale) {
  const int64_t d = q.size(-1), dv = v.size(-1), tk = k.size(2);
  check_head_dims(op, d, dv);
  const int device = q.device().index;
  const int64_t key_tiles = (tk + kRowTile - 1) / kRowTile;
  dispatch_math_float(q.dtype(), op, [&]<class T>() {
    using A = acc_t<T>;
    MOH_CHECK(lse.dtype() == dtype_of<A>, op, ": lse must be ", dtype_name(dtype_of<A>), ", got ", describe(lse));
    // delta_i per query row in packed-row order (dense: g * Tq + i), written by grad_q_kernel.
    const Tensor delta = Tensor::empty({work.geo.offsets ? q.size(0) : work.geo.groups * work.geo.tq},
                                       dtype_of<A>, q.device());
    dispatch_slots(std::max(d, dv), [&]<int Slots>() {
      launch(op, "attention grad_q", grad_q_kernel<T, Slots>, work.tiles, grad_q_smem<A>(int(d), int(dv)), device,
             work.geo, rows_of<const T>(q), rows_of<const T>(k), rows_of<const T>(v), rows_of<const T>(out),
             rows_of<const T>(grad_out), rows_of<const A>(lse), rows_of<T>(grad_q), delta.data<A>(), int(d), int(dv),
             A(scale));
      const int64_t kv_units = work.geo.groups / work.geo.kv_group;  // (batch, K/V head) pairs
      launch(op, "attention grad_kv", grad_kv_kernel<T, Slots>, kv_units * key_tiles,
             grad_kv_smem<A>(int(d), int(dv)), device, work.geo, key_tiles, rows_of<const T>(q), rows_of<const T>(k),
             rows_of<const T>(v), rows_of<const T>(grad_out), rows_of<const A>(lse),
             delta.data<A>(), rows_of<T>(grad_k), rows_of<T>(grad_v), int(d), int(dv),
             A(scale));
    });
  });
}

}  // namespace

void attention_backward(const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v, const Tensor& grad_out,
                        const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        double scale, bool causal) {
  DeviceGuard guard(q.device().index);
  run_backward("attention_backward", dense_work(q, k, causal), grad_q, grad_k, grad_v, grad_out, q, k, v, out, lse,
               scale);
}

void attention_packed_backward(const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v,
                               const Tensor& grad_out, const Tensor& q_rows, const Tensor& row_offsets,
                               const Tensor& q_pos, int64_t heads, const Tensor& k, const Tensor& v,
                               const Tensor& out, const Tensor& lse, double scale, bool causal) {
  DeviceGuard guard(q_rows.device().index);
  run_backward("attention_packed_backward", packed_work(row_offsets, q_pos, heads, k, causal), grad_q, grad_k,
               grad_v,
               grad_out, q_rows, k, v, out, lse, scale);
}

}  // namespace moh::cuda
