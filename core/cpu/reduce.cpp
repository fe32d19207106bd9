// CPU reduction engine. x is split into kept dims (one per output element) and reduced dims, each
// coalesced; reduced dims are walked innermost-stride first. Two paths:
//  A. a reduced dim has the smallest stride: each task folds a contiguous-ish range of one output
//     (8 interleaved accumulators on unit stride);
//  B. a kept dim has the smallest stride: each task folds a block of up to 1024 neighbouring
//     outputs at once, so the inner loop runs along memory (reducing over rows, e.g. bias grads)
//     and a task reads whole rows of a typical [rows, features] matrix.
// When there are few output tasks the reduced range is also split into chunks whose partial
// results are merged in a fixed order, so results never depend on the thread count.
#include "core/kernels/reduce.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>

#include "core/cpu/strided_loop.h"
#include "core/dispatch.h"

namespace moh::cpu {
namespace {

constexpr int64_t kSplitOutputs = 64;  // with this many output tasks the reduced range is not split
constexpr int64_t kMaxChunks = 1024;
constexpr int64_t kBlock = 1024;  // outputs per task on path B
constexpr int kLanes = 8;

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}

// ---------------------------------------------------------------------------- policies

template <class T>
struct SumPolicy {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  using Out = T;
  int64_t divisor = 1;  // the reduced count for mean
  Acc init() const { return 0; }
  void step(Acc& a, T v, int64_t) const { a += Acc(v); }
  void merge(Acc& a, const Acc& b) const { a += b; }
  Out finish(const Acc& a) const {
    if constexpr (std::is_floating_point_v<T>)
      return T(a / double(divisor));
    else
      return T(a);
  }
};

template <class T, bool kMax>
struct ExtremePolicy {
  using Acc = T;
  using Out = T;
  Acc init() const {
    using L = std::numeric_limits<T>;
    if constexpr (L::has_infinity)
      return kMax ? -L::infinity() : L::infinity();
    else
      return kMax ? L::lowest() : L::max();
  }
  void step(Acc& a, T v, int64_t) const {
    if ((kMax ? v > a : v < a) || is_nan(v)) a = v;
  }
  void merge(Acc& a, const Acc& b) const {
    if (!is_nan(a)) step(a, b, 0);
  }
  Out finish(const Acc& a) const { return a; }
};

template <class T>
struct ArgmaxPolicy {
  struct Acc {
    T v;
    int64_t i;  // -1 while empty
  };
  using Out = int64_t;
  Acc init() const { return {T(), -1}; }
  void step(Acc& a, T v, int64_t r) const {  // r increases along one accumulator
    if (a.i < 0 || v > a.v || (is_nan(v) && !is_nan(a.v))) a = {v, r};
  }
  void merge(Acc& a, const Acc& b) const {
    if (b.i < 0) return;
    if (a.i < 0) {
      a = b;
      return;
    }
    bool an = is_nan(a.v), bn = is_nan(b.v);
    bool take = (an || bn) ? (bn && (!an || b.i < a.i)) : (b.v > a.v || (b.v == a.v && b.i < a.i));
    if (take) a = b;
  }
  Out finish(const Acc& a) const { return a.i; }
};

// ---------------------------------------------------------------------------- layout

// A group of dims walked by flat index (innermost last) with x and out element strides.
struct Dims {
  Shape size;
  std::vector<int64_t> x_stride, out_stride;

  void push(int64_t n, int64_t xs, int64_t os) {
    size.push_back(n);
    x_stride.push_back(xs);
    out_stride.push_back(os);
  }
  int64_t numel() const { return shape_numel(size); }
  // x and out offsets of flat index i over the first `nd` dims.
  void offsets(int64_t i, int64_t& xo, int64_t& oo, size_t nd) const {
    xo = oo = 0;
    for (size_t d = nd; d-- > 0;) {
      int64_t k = i % size[d];
      i /= size[d];
      xo += k * x_stride[d];
      oo += k * out_stride[d];
    }
  }
  void offsets(int64_t i, int64_t& xo, int64_t& oo) const { offsets(i, xo, oo, size.size()); }
};

// Merges neighbouring dims that are contiguous with each other in both x and out.
Dims coalesce(const Dims& in) {
  Dims out;
  for (size_t d = 0; d < in.size.size(); ++d) {
    if (!out.size.empty() && out.x_stride.back() == in.x_stride[d] * in.size[d] &&
        out.out_stride.back() == in.out_stride[d] * in.size[d]) {
      out.size.back() *= in.size[d];
      out.x_stride.back() = in.x_stride[d];
      out.out_stride.back() = in.out_stride[d];
    } else {
      out.push(in.size[d], in.x_stride[d], in.out_stride[d]);
    }
  }
  return out;
}

// Walks a Dims group in flat order, keeping the x offset.
struct Cursor {
  const Dims& dims;
  std::vector<int64_t> idx;
  int64_t off = 0;

  Cursor(const Dims& d, int64_t flat) : dims(d), idx(d.size.size(), 0) {
    for (size_t k = d.size.size(); k-- > 0;) {
      idx[k] = flat % d.size[k];
      flat /= d.size[k];
      off += idx[k] * d.x_stride[k];
    }
  }
  void next() {
    for (size_t k = dims.size.size(); k-- > 0;) {
      off += dims.x_stride[k];
      if (++idx[k] < dims.size[k]) return;
      off -= dims.x_stride[k] * dims.size[k];
      idx[k] = 0;
    }
  }
};

// Chunks of the reduced range: 1 when there are enough output tasks or little work.
int64_t split_count(int64_t tasks, int64_t reduce_len, int64_t elems_per_step) {
  if (tasks >= kSplitOutputs || tasks * reduce_len * elems_per_step < 2 * kParallelGrain) return 1;
  int64_t steps_per_chunk = std::max<int64_t>(1, kParallelGrain / elems_per_step);
  return std::clamp<int64_t>((reduce_len + steps_per_chunk - 1) / steps_per_chunk, 1, kMaxChunks);
}

// ---------------------------------------------------------------------------- engine

template <class T, class P>
void fold_contiguous(const P& p, const T* ptr, int64_t n, int64_t r, typename P::Acc& acc) {
  if (n < 2 * kLanes) {
    for (int64_t i = 0; i < n; ++i) p.step(acc, ptr[i], r + i);
    return;
  }
  std::array<typename P::Acc, kLanes> lane;
  lane.fill(p.init());
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) p.step(lane[size_t(k)], ptr[i + k], r + i + k);
  for (; i < n; ++i) p.step(lane[0], ptr[i], r + i);
  for (int k = 0; k < kLanes; ++k) p.merge(acc, lane[size_t(k)]);
}

// Folds flat reduced indices [r0, r1) of one output whose x data starts at base (path A).
template <class T, class P>
typename P::Acc fold_range(const P& p, const T* base, const Dims& red, int64_t r0, int64_t r1) {
  typename P::Acc acc = p.init();
  const int64_t inner = red.size.back(), is = red.x_stride.back();
  for (int64_t r = r0; r < r1;) {
    int64_t pos = r % inner, xo, unused;
    red.offsets(r / inner, xo, unused, red.size.size() - 1);
    int64_t len = std::min(inner - pos, r1 - r);
    const T* ptr = base + xo + pos * is;
    if (is == 1)
      fold_contiguous(p, ptr, len, r, acc);
    else
      for (int64_t i = 0; i < len; ++i) p.step(acc, ptr[i * is], r + i);
    r += len;
  }
  return acc;
}

template <class T, class P>
void reduce_path_a(const P& p, typename P::Out* out, const T* x, const Dims& kept, const Dims& red) {
  using Acc = typename P::Acc;
  const int64_t M = kept.numel(), R = red.numel();
  const int64_t C = split_count(M, R, 1), chunk = (R + C - 1) / C;
  std::vector<Acc> partial(size_t(C > 1 ? M * C : 0));
#pragma omp parallel for schedule(static) if (M * R >= 2 * kParallelGrain)
  for (int64_t t = 0; t < M * C; ++t) {
    int64_t m = t / C, c = t % C, xo, oo;
    kept.offsets(m, xo, oo);
    Acc acc = fold_range(p, x + xo, red, c * chunk, std::min(R, (c + 1) * chunk));
    if (C == 1)
      out[oo] = p.finish(acc);
    else
      partial[size_t(t)] = acc;
  }
  if (C == 1) return;
  for (int64_t m = 0; m < M; ++m) {
    int64_t xo, oo;
    kept.offsets(m, xo, oo);
    Acc acc = partial[size_t(m * C)];
    for (int64_t c = 1; c < C; ++c) p.merge(acc, partial[size_t(m * C + c)]);
    out[oo] = p.finish(acc);
  }
}

// Path B: kept dim `kin` (the smallest x stride) runs innermost, in blocks of kBlock outputs.
template <class T, class P>
void reduce_path_b(const P& p, typename P::Out* out, const T* x, const Dims& kept, size_t kin,
                   const Dims& red) {
  using Acc = typename P::Acc;
  Dims outer;
  for (size_t d = 0; d < kept.size.size(); ++d)
    if (d != kin) outer.push(kept.size[d], kept.x_stride[d], kept.out_stride[d]);
  const int64_t K = kept.size[kin], sk = kept.x_stride[kin], so = kept.out_stride[kin];
  const int64_t M2 = outer.numel(), R = red.numel(), blocks = (K + kBlock - 1) / kBlock;
  const int64_t tasks = M2 * blocks;
  const int64_t C = split_count(tasks, R, std::min(K, kBlock)), chunk = (R + C - 1) / C;
  std::vector<Acc> partial(size_t(C > 1 ? M2 * K * C : 0));
#pragma omp parallel for schedule(static) if (M2 * K * R >= 2 * kParallelGrain)
  for (int64_t t = 0; t < tasks * C; ++t) {
    const int64_t c = t % C, blk = (t / C) % blocks, m2 = t / C / blocks;
    const int64_t j0 = blk * kBlock, len = std::min(kBlock, K - j0);
    int64_t xo, oo;
    outer.offsets(m2, xo, oo);
    std::array<Acc, kBlock> acc;
    std::fill(acc.begin(), acc.begin() + len, p.init());
    const T* base = x + xo + j0 * sk;
    const int64_t r0 = c * chunk, r1 = std::min(R, r0 + chunk);
    Cursor cur(red, r0);
    for (int64_t r = r0; r < r1; ++r, cur.next()) {
      const T* ptr = base + cur.off;
      if (sk == 1)
        for (int64_t j = 0; j < len; ++j) p.step(acc[size_t(j)], ptr[j], r);
      else
        for (int64_t j = 0; j < len; ++j) p.step(acc[size_t(j)], ptr[j * sk], r);
    }
    for (int64_t j = 0; j < len; ++j) {
      if (C == 1)
        out[oo + (j0 + j) * so] = p.finish(acc[size_t(j)]);
      else
        partial[size_t(((m2 * K) + j0 + j) * C + c)] = acc[size_t(j)];
    }
  }
  if (C == 1) return;
  for (int64_t i = 0; i < M2 * K; ++i) {
    int64_t xo, oo;
    outer.offsets(i / K, xo, oo);
    Acc acc = partial[size_t(i * C)];
    for (int64_t c = 1; c < C; ++c) p.merge(acc, partial[size_t(i * C + c)]);
    out[oo + (i % K) * so] = p.finish(acc);
  }
}

template <class T, class P>
void reduce_impl(const P& p, const Tensor& out, const Tensor& x, const std::vector<bool>& reduced) {
  using Out = typename P::Out;
  Out* o = out.data<Out>();
  const T* xd = x.data<T>();
  Dims kept_all, red_all;
  for (size_t d = 0; d < x.shape().size(); ++d) {
    if (x.shape()[d] == 1) continue;
    if (reduced[d])
      red_all.push(x.shape()[d], x.strides()[d], 0);
    else
      kept_all.push(x.shape()[d], x.strides()[d], out.strides()[d]);
  }
  Dims kept = coalesce(kept_all);
  // Reduced dims in order of decreasing stride, so the innermost walk follows memory.
  std::vector<size_t> order(red_all.size.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::abs(red_all.x_stride[a]) > std::abs(red_all.x_stride[b]);
  });
  Dims red_sorted;
  for (size_t d : order) red_sorted.push(red_all.size[d], red_all.x_stride[d], 0);
  Dims red = coalesce(red_sorted);
  if (red.size.empty()) red.push(1, 0, 0);

  const int64_t M = kept.numel(), R = red.numel();
  if (M == 0) return;
  if (R == 0) {
    std::fill(o, o + out.numel(), p.finish(p.init()));
    return;
  }
  size_t kin = 0;
  for (size_t d = 1; d < kept.size.size(); ++d)
    if (std::abs(kept.x_stride[d]) < std::abs(kept.x_stride[kin])) kin = d;
  if (!kept.size.empty() && R > 1 && std::abs(kept.x_stride[kin]) < std::abs(red.x_stride.back()))
    reduce_path_b<T>(p, o, xd, kept, kin, red);
  else
    reduce_path_a<T>(p, o, xd, kept, red);
}

}  // namespace

void reduce(ReduceOp op, const Tensor& out, const Tensor& x, const std::vector<bool>& reduced) {
  const char* name = op_name(op);
  switch (op) {
    case ReduceOp::Sum:
      return dispatch_numeric(x.dtype(), name,
                              [&]<class T>() { reduce_impl<T>(SumPolicy<T>{}, out, x, reduced); });
    case ReduceOp::Mean: {
      int64_t count = 1;
      for (size_t d = 0; d < reduced.size(); ++d)
        if (reduced[d]) count *= x.shape()[d];
      return dispatch_floating(x.dtype(), name,
                               [&]<class T>() { reduce_impl<T>(SumPolicy<T>{count}, out, x, reduced); });
    }
    case ReduceOp::Amax:
      return dispatch_numeric(x.dtype(), name,
                              [&]<class T>() { reduce_impl<T>(ExtremePolicy<T, true>{}, out, x, reduced); });
    case ReduceOp::Amin:
      return dispatch_numeric(x.dtype(), name,
                              [&]<class T>() { reduce_impl<T>(ExtremePolicy<T, false>{}, out, x, reduced); });
  }
}

void argmax(const Tensor& out, const Tensor& x, int64_t dim) {
  std::vector<bool> reduced(x.shape().size(), false);
  reduced[size_t(dim)] = true;
  dispatch_numeric(x.dtype(), "argmax",
                   [&]<class T>() { reduce_impl<T>(ArgmaxPolicy<T>{}, out, x, reduced); });
}

}  // namespace moh::cpu
