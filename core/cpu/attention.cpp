// Blocked attention on the CPU. Work is split into groups (one per batch x head); a group's query rows are processed in
// blocks (query_block: 128 rows, 64 when causal) against key blocks of kBlockK: scores come from one GEMM per block
// pair, an online softmax folds them into running (max, sum) per row, and a second GEMM accumulates P @ V. The backward
// recomputes P from the saved log-sum-exp (FlashAttention-style) and accumulates dQ, dK, dV with three more GEMMs per
// block pair. BLAS runs single-threaded inside the parallel regions. Grouped-query attention: query head h reads K/V
// head h / (H / Hkv) through its group's pointers; nothing is repeated. The forward runs groups in parallel (each
// writes only its own rows). The backward runs in parallel over K/V units (batch, K/V head): a unit walks its query
// heads in ascending order, so the dK/dV of a shared head are summed by one thread in a fixed order (the same bits for
// any thread count). Dense and packed queries differ only in how a group's rows and positions are found, captured by
// the group table built below.
#include "core/kernels/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/cpu/blas.h"
#include "core/cpu/small_gemm.h"
#include "core/dispatch.h"
#include "core/kernels/fill.h"
#include "core/math/fast_exp.h"

namespace moh::cpu {
namespace {

constexpr int64_t kBlockK = 128;
constexpr int64_t kMaxBlockQ = 128;

template <class T>
inline T exp_fast(T x) {
  if constexpr (std::is_same_v<T, float>) return fast_exp(x);
  else return std::exp(x);
}

// One (batch, head) group: where its query rows, outputs and keys/values live. Row strides are
// shared by all groups (RowStrides).
template <class T>
struct Group {
  const T* q = nullptr;
  T* out = nullptr;
  T* lse = nullptr;  // contiguous per group
  const T* k = nullptr;
  const T* v = nullptr;
  int64_t rows = 0;
  const int64_t* pos = nullptr;  // row i sits at position pos[i], or at i + shift when null
  int64_t shift = 0;
  // backward only
  const T* grad_out = nullptr;
  T* grad_q = nullptr;
  T* grad_k = nullptr;
  T* grad_v = nullptr;

  int64_t position(int64_t i) const { return pos ? pos[i] : i + shift; }
};

struct RowStrides {
  int64_t q = 0, out = 0, k = 0, v = 0, grad_out = 0, grad_q = 0, grad_k = 0, grad_v = 0;
};

struct Dims {
  int64_t tk = 0, d = 0, dv = 0;
  bool causal = false;
  // Dense queries: every block's row count follows from the shapes, so the forward may send a
  // single query row to gemv (blas.h: gemm_or_gemv); packed groups' row counts follow the routing.
  bool rows_by_shape = false;
};

// Query rows per block. Each block packs its key and value blocks for the GEMMs, so taller blocks spread
// that over more rows (128 against 64: the 32-head x 64 attention step 8% faster at 256 and 512 tokens);
// a causal block, though, scans the keys up to its last row, and taller blocks score more masked pairs
// (the KJV LLM's step, 256 tokens, 4% slower at 128), so causal blocks stay at 64.
inline int64_t query_block(const Dims& dims) {
  return dims.causal ? kMaxBlockQ / 2 : kMaxBlockQ;
}

// Every block product: small ones (by n and k, never by the row count m, so a row's bits do not
// depend on how many rows share its block) through small_gemm, the rest through BLAS; the forward's
// dense queries may send a single row to gemv (see Dims::rows_by_shape).
template <class T>
void block_gemm(const Dims& dims, bool forward, GemmOperand a, GemmOperand b, int64_t m, int64_t n, int64_t k,
                T alpha, const T* pa, const T* pb, T beta, T* pc, int64_t ldc) {
  if (n <= kSmallGemmMax && k <= kSmallGemmMax) small_gemm(a, b, m, n, k, alpha, pa, pb, beta, pc, ldc);
  else if (forward && dims.rows_by_shape) gemm_or_gemv(a, b, m, n, k, alpha, pa, pb, beta, pc, ldc);
  else gemm(a, b, m, n, k, alpha, pa, pb, beta, pc, ldc);
}

// Number of keys row i may attend.
template <class T>
inline int64_t key_limit(const Group<T>& g, int64_t i, const Dims& dims) {
  if (!dims.causal) return dims.tk;
  return std::clamp<int64_t>(g.position(i) + 1, 0, dims.tk);
}

// Fills limit[i] for the query block's rows [q0, q0 + bq) and returns the largest (the keys the
// block must visit).
template <class T>
int64_t block_key_limits(const Group<T>& g, int64_t q0, int64_t bq, const Dims& dims, std::vector<int64_t>& limit) {
  int64_t kmax = 0;
  for (int64_t i = 0; i < bq; ++i) {
    limit[size_t(i)] = key_limit(g, q0 + i, dims);
    kmax = std::max(kmax, limit[size_t(i)]);
  }
  return kmax;
}

template <class T>
void forward_group(const Group<T>& g, const RowStrides& rs, const Dims& dims, T scale, std::vector<T>& scores,
                   std::vector<T>& acc, std::vector<T>& row_max, std::vector<T>& row_sum, std::vector<int64_t>& limit) {
  const int64_t block_q = query_block(dims);
  for (int64_t q0 = 0; q0 < g.rows; q0 += block_q) {
    const int64_t bq = std::min(block_q, g.rows - q0);
    const int64_t kmax = block_key_limits(g, q0, bq, dims, limit);
    std::fill(row_max.begin(), row_max.begin() + bq, -std::numeric_limits<T>::infinity());
    std::fill(row_sum.begin(), row_sum.begin() + bq, T(0));
    std::fill(acc.begin(), acc.begin() + bq * dims.dv, T(0));
    const T* qb = g.q + q0 * rs.q;
    for (int64_t k0 = 0; k0 < kmax; k0 += kBlockK) {
      const int64_t bk = std::min(kBlockK, kmax - k0);
      block_gemm<T>(dims, true, {false, rs.q}, {true, rs.k}, bq, bk, dims.d, scale, qb, g.k + k0 * rs.k, T(0),
                    scores.data(), kBlockK);
      for (int64_t i = 0; i < bq; ++i) {
        T* s = scores.data() + i * kBlockK;
        const int64_t valid = std::clamp<int64_t>(limit[size_t(i)] - k0, 0, bk);
        T block_max = -std::numeric_limits<T>::infinity();
        for (int64_t j = 0; j < valid; ++j) block_max = std::max(block_max, s[j]);
        const T new_max = std::max(row_max[size_t(i)], block_max);
        T sum = 0;
        if (valid > 0) {
          for (int64_t j = 0; j < valid; ++j) {
            s[j] = exp_fast(s[j] - new_max);
            sum += s[j];
          }
        }
        for (int64_t j = valid; j < bk; ++j) s[j] = 0;
        if (valid == 0) continue;
        const T correction = row_max[size_t(i)] == -std::numeric_limits<T>::infinity()
                                 ? T(0)
                                 : exp_fast(row_max[size_t(i)] - new_max);
        row_sum[size_t(i)] = row_sum[size_t(i)] * correction + sum;
        row_max[size_t(i)] = new_max;
        if (correction != T(1)) {
          T* a = acc.data() + i * dims.dv;
          for (int64_t c = 0; c < dims.dv; ++c) a[c] *= correction;
        }
      }
      block_gemm<T>(dims, true, {false, kBlockK}, {false, rs.v}, bq, dims.dv, bk, T(1), scores.data(),
                    g.v + k0 * rs.v, T(1), acc.data(), dims.dv);
    }
    for (int64_t i = 0; i < bq; ++i) {
      T* o = g.out + (q0 + i) * rs.out;
      const T* a = acc.data() + i * dims.dv;
      const T l = row_sum[size_t(i)];
      if (l == T(0)) {  // no key visible (causal row before the first key)
        std::fill(o, o + dims.dv, T(0));
        g.lse[q0 + i] = -std::numeric_limits<T>::infinity();
        continue;
      }
      const T inv = T(1) / l;
      for (int64_t c = 0; c < dims.dv; ++c) o[c] = a[c] * inv;
      g.lse[q0 + i] = row_max[size_t(i)] + std::log(l);
    }
  }
}

template <class T>
void backward_group(const Group<T>& g, const RowStrides& rs, const Dims& dims, T scale, std::vector<T>& p,
                    std::vector<T>& dp, std::vector<T>& delta, std::vector<int64_t>& limit) {
  // grad_q/k/v were zeroed by the caller; every block pair adds its share.
  const int64_t block_q = query_block(dims);
  for (int64_t q0 = 0; q0 < g.rows; q0 += block_q) {
    const int64_t bq = std::min(block_q, g.rows - q0);
    const int64_t kmax = block_key_limits(g, q0, bq, dims, limit);
    for (int64_t i = 0; i < bq; ++i) {
      const T* go = g.grad_out + (q0 + i) * rs.grad_out;
      const T* o = g.out + (q0 + i) * rs.out;
      T dot = 0;
      for (int64_t c = 0; c < dims.dv; ++c) dot += go[c] * o[c];
      delta[size_t(i)] = dot;
    }
    const T* qb = g.q + q0 * rs.q;
    const T* gob = g.grad_out + q0 * rs.grad_out;
    T* gqb = g.grad_q + q0 * rs.grad_q;
    for (int64_t k0 = 0; k0 < kmax; k0 += kBlockK) {
      const int64_t bk = std::min(kBlockK, kmax - k0);
      const T* kb = g.k + k0 * rs.k;
      const T* vb = g.v + k0 * rs.v;
      block_gemm<T>(dims, false, {false, rs.q}, {true, rs.k}, bq, bk, dims.d, scale, qb, kb, T(0), p.data(),
                    kBlockK);
      block_gemm<T>(dims, false, {false, rs.grad_out}, {true, rs.v}, bq, bk, dims.dv, T(1), gob, vb, T(0),
                    dp.data(), kBlockK);
      for (int64_t i = 0; i < bq; ++i) {
        T* pi = p.data() + i * kBlockK;
        T* dpi = dp.data() + i * kBlockK;
        const int64_t valid = std::clamp<int64_t>(limit[size_t(i)] - k0, 0, bk);
        const T lse = g.lse[q0 + i];
        for (int64_t j = 0; j < valid; ++j) {
          pi[j] = exp_fast(pi[j] - lse);
          dpi[j] = pi[j] * (dpi[j] - delta[size_t(i)]);  // dS
        }
        for (int64_t j = valid; j < bk; ++j) pi[j] = dpi[j] = 0;
      }
      // dV += P^T dO ; dQ += scale dS K ; dK += scale dS^T Q
      block_gemm<T>(dims, false, {true, kBlockK}, {false, rs.grad_out}, bk, dims.dv, bq, T(1), p.data(), gob, T(1),
                    g.grad_v + k0 * rs.grad_v, rs.grad_v);
      block_gemm<T>(dims, false, {false, kBlockK}, {false, rs.k}, bq, dims.d, bk, scale, dp.data(), kb, T(1), gqb,
                    rs.grad_q);
      block_gemm<T>(dims, false, {true, kBlockK}, {false, rs.q}, bk, dims.d, bq, scale, dp.data(), qb, T(1),
                    g.grad_k + k0 * rs.grad_k, rs.grad_k);
    }
  }
}

// Groups in K/V-unit order: unit u owns groups [unit_offsets[u], unit_offsets[u + 1]), the query
// heads (ascending) that read one K/V head of one batch row.
template <class T>
struct GroupTable {
  std::vector<Group<T>> groups;
  std::vector<size_t> unit_offsets{0};
  void close_unit() { unit_offsets.push_back(groups.size()); }
};

// Work items handed out per grab: about four runs of neighbouring items per thread. One item at a
// time made the threads contend on the shared counter for items of a microsecond (a ViT-tiny's 1,024
// groups of 16 rows ran slower on two threads than on one); a few contiguous runs keep neighbouring
// groups on one thread and still even out groups of unequal rows.
inline int64_t items_per_grab(size_t items) {
  return std::max<int64_t>(1, int64_t(items) / (4 * int64_t(omp_get_num_threads())));
}

template <class T>
void run_forward(const std::vector<Group<T>>& groups, const RowStrides& rs, const Dims& dims, T scale) {
#pragma omp parallel
  {
    const int64_t grab = items_per_grab(groups.size());
    std::vector<T> scores(size_t(kMaxBlockQ * kBlockK)), acc(size_t(kMaxBlockQ * dims.dv)), row_max(kMaxBlockQ),
        row_sum(kMaxBlockQ);
    std::vector<int64_t> limit(kMaxBlockQ);
#pragma omp for schedule(dynamic, grab)
    for (size_t gi = 0; gi < groups.size(); ++gi)
      forward_group(groups[gi], rs, dims, scale, scores, acc, row_max, row_sum, limit);
  }
}

template <class T>
void run_backward(const GroupTable<T>& table, const RowStrides& rs, const Dims& dims, T scale) {
  const size_t units = table.unit_offsets.size() - 1;
#pragma omp parallel
  {
    const int64_t grab = items_per_grab(units);
    std::vector<T> p(size_t(kMaxBlockQ * kBlockK)), dp(size_t(kMaxBlockQ * kBlockK)), delta(kMaxBlockQ);
    std::vector<int64_t> limit(kMaxBlockQ);
#pragma omp for schedule(dynamic, grab)
    for (size_t u = 0; u < units; ++u)
      for (size_t gi = table.unit_offsets[u]; gi < table.unit_offsets[u + 1]; ++gi)
        backward_group(table.groups[gi], rs, dims, scale, p, dp, delta, limit);
  }
}

// Element pointer of group (b, h) in a [B, H, ...] tensor.
template <class T>
T* group_ptr(const Tensor& t, int64_t b, int64_t h) {
  return static_cast<T*>(t.raw_data()) + b * t.stride(0) + h * t.stride(1);
}

// The group table for dense [B, H, T, *] operands with k, v [B, Hkv, Tk, *]; `out`, `lse` and
// backward tensors are optional.
template <class T>
GroupTable<T> dense_groups(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                           const Tensor* grads /* grad_out, grad_q, grad_k, grad_v */) {
  const int64_t batch = q.size(0), heads = q.size(1), kv_heads = k.size(1), per_kv = heads / kv_heads;
  GroupTable<T> table;
  table.groups.reserve(size_t(batch * heads));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t kv = 0; kv < kv_heads; ++kv) {
      for (int64_t h = kv * per_kv; h < (kv + 1) * per_kv; ++h) {
        Group<T> g;
        g.q = group_ptr<T>(q, b, h);
        g.k = group_ptr<T>(k, b, kv);
        g.v = group_ptr<T>(v, b, kv);
        g.out = group_ptr<T>(out, b, h);
        g.lse = group_ptr<T>(lse, b, h);
        g.rows = q.size(2);
        g.shift = k.size(2) - q.size(2);
        if (grads) {
          g.grad_out = group_ptr<T>(grads[0], b, h);
          g.grad_q = group_ptr<T>(grads[1], b, h);
          g.grad_k = group_ptr<T>(grads[2], b, kv);
          g.grad_v = group_ptr<T>(grads[3], b, kv);
        }
        table.groups.push_back(g);
      }
      table.close_unit();
    }
  return table;
}

// The group table for packed query rows of `heads` query heads: group g = h * B + b owns rows
// [offsets[g], offsets[g+1]) and reads K/V head h / (heads / Hkv). Empty groups are left out.
template <class T>
GroupTable<T> packed_groups(const Tensor& q_rows, const Tensor& row_offsets, const Tensor& q_pos, int64_t heads,
                            const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                            const Tensor* grads /* grad_out, grad_q, grad_k, grad_v */) {
  const int64_t batch = k.size(0), kv_heads = k.size(1), per_kv = heads / kv_heads;
  const int64_t* offsets = row_offsets.data<int64_t>();
  const int64_t* pos = q_pos.data<int64_t>();
  GroupTable<T> table;
  table.groups.reserve(size_t(batch * heads));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t kv = 0; kv < kv_heads; ++kv) {
      for (int64_t h = kv * per_kv; h < (kv + 1) * per_kv; ++h) {
        const int64_t gi = h * batch + b, r0 = offsets[gi];
        Group<T> g;
        g.rows = offsets[gi + 1] - r0;
        if (g.rows == 0) continue;
        g.q = q_rows.data<T>() + r0 * q_rows.stride(0);
        g.out = out.data<T>() + r0 * out.stride(0);
        g.lse = lse.data<T>() + r0;
        g.pos = pos + r0;
        g.k = group_ptr<T>(k, b, kv);
        g.v = group_ptr<T>(v, b, kv);
        if (grads) {
          g.grad_out = grads[0].data<T>() + r0 * grads[0].stride(0);
          g.grad_q = grads[1].data<T>() + r0 * grads[1].stride(0);
          g.grad_k = group_ptr<T>(grads[2], b, kv);
          g.grad_v = group_ptr<T>(grads[3], b, kv);
        }
        table.groups.push_back(g);
      }
      table.close_unit();
    }
  return table;
}

// Row strides: dim 2 of [B, H, T, *] tensors, dim 0 of packed [R, *] rows. A single row's stride
// is arbitrary in a view; BLAS only needs it to be at least the row length then.
int64_t row_stride(const Tensor& t) {
  const int64_t dim = t.dim() == 4 ? 2 : 0;
  return t.size(dim) == 1 ? std::max(t.stride(dim), t.size(-1)) : t.stride(dim);
}

RowStrides strides_of(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor* grads) {
  RowStrides rs;
  rs.q = row_stride(q);
  rs.k = row_stride(k);
  rs.v = row_stride(v);
  rs.out = row_stride(out);
  if (grads) {
    rs.grad_out = row_stride(grads[0]);
    rs.grad_q = row_stride(grads[1]);
    rs.grad_k = row_stride(grads[2]);
    rs.grad_v = row_stride(grads[3]);
  }
  return rs;
}

Dims dims_of(const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
  return {k.size(2), q.size(-1), v.size(-1), causal};
}

}  // namespace

void attention(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v, double scale,
               bool causal) {
  dispatch_floating(q.dtype(), "attention", [&]<class T>() {
    Dims dims = dims_of(q, k, v, causal);
    dims.rows_by_shape = true;
    run_forward<T>(dense_groups<T>(q, k, v, out, lse, nullptr).groups, strides_of(q, k, v, out, nullptr), dims,
                   T(scale));
  });
}

void attention_backward(const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v, const Tensor& grad_out,
                        const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        double scale, bool causal) {
  for (const Tensor* g : {&grad_q, &grad_k, &grad_v}) fill(*g, 0.0);
  const Tensor grads[4] = {grad_out, grad_q, grad_k, grad_v};
  dispatch_floating(q.dtype(), "attention_backward", [&]<class T>() {
    run_backward<T>(dense_groups<T>(q, k, v, out, lse, grads), strides_of(q, k, v, out, grads),
                    dims_of(q, k, v, causal), T(scale));
  });
}

void attention_packed(const Tensor& out, const Tensor& lse, const Tensor& q_rows, const Tensor& row_offsets,
                      const Tensor& q_pos, int64_t heads, const Tensor& k, const Tensor& v, double scale,
                      bool causal) {
  dispatch_floating(q_rows.dtype(), "attention_packed", [&]<class T>() {
    run_forward<T>(packed_groups<T>(q_rows, row_offsets, q_pos, heads, k, v, out, lse, nullptr).groups,
                   strides_of(q_rows, k, v, out, nullptr), dims_of(q_rows, k, v, causal), T(scale));
  });
}

void attention_packed_backward(const Tensor& grad_q, const Tensor& grad_k, const Tensor& grad_v,
                               const Tensor& grad_out, const Tensor& q_rows, const Tensor& row_offsets,
                               const Tensor& q_pos, int64_t heads, const Tensor& k, const Tensor& v,
                               const Tensor& out, const Tensor& lse, double scale, bool causal) {
  for (const Tensor* g : {&grad_q, &grad_k, &grad_v}) fill(*g, 0.0);
  const Tensor grads[4] = {grad_out, grad_q, grad_k, grad_v};
  dispatch_floating(q_rows.dtype(), "attention_packed_backward", [&]<class T>() {
    run_backward<T>(packed_groups<T>(q_rows, row_offsets, q_pos, heads, k, v, out, lse, grads),
                    strides_of(q_rows, k, v, out, grads), dims_of(q_rows, k, v, causal), T(scale));
  });
}

}  // namespace moh::cpu
