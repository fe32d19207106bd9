// The learned MoH router (DESIGN.md "MoH attention", layers/moh_routing.h), forward and backward, shared by
// the CPU and CUDA backends of moh_route. A token's logits row is [E router | hs shared-gate logits when
// hs > 1 | 2 stage-gate logits when hs > 0] with E = H - hs routed heads and K of them selected:
//   p = softmax(router), m = top-K of p (NaN first, ties to the lower index, as topk), S = sum(p*m),
//   r = K * (p*m / max(S, eps)), s = hs * softmax(shared) (1 when hs == 1), a = 2 * softmax(stage),
//   gates = r (hs == 0) or [a0 * s, a1 * r].
// The backward takes d gates and d p (the balance loss reaches p) and returns d logits; the clamp at
// eps passes the gradient where S >= eps, as ag::clamp.
// The math runs on L tokens side by side ("lanes", every value an [L] array, every loop over lanes
// innermost): the CPU routes 8 at a time, whose lane loops the compiler turns into vector instructions; a
// CUDA thread routes one (L = 1). Each lane computes exactly what a lone token would, so a token's results
// do not depend on its lane, its block or the thread count. Lanes past `lanes` (a short last block) are
// routed from zero logits and never stored. `Acc` is the arithmetic type (float for the float types,
// double for double); T the storage type.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/half.h"
#include "core/macros.h"
#include "core/math/softmax_math.h"

namespace moh {

// The most routed (E) and shared (hs) heads a token's scratch holds.
inline constexpr int64_t kMaxRoutedHeads = 128;
inline constexpr int64_t kMaxRouteColumns = 2 * kMaxRoutedHeads + 2;

struct RouteShape {
  int64_t heads = 0;   // H
  int64_t shared = 0;  // hs
  int64_t topk = 0;    // K >= 1
  MOH_HOST_DEVICE int64_t routed() const { return heads - shared; }
  MOH_HOST_DEVICE int64_t shared_logits() const { return shared > 1 ? shared : 0; }
  MOH_HOST_DEVICE int64_t columns() const { return routed() + shared_logits() + (shared > 0 ? 2 : 0); }
};

// out[i][l] = value of column i for lane l, from rows [lanes][width] of T (null: zeros).
template <class Acc, int L, class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE void route_load_lanes(const T* rows, int64_t width, int lanes, Acc (*out)[L]) {
  const int loaded = rows ? lanes : 0;
  for (int l = 0; l < loaded; ++l)
    for (int64_t i = 0; i < width; ++i) out[i][l] = Acc(rows[l * width + i]);
  for (int l = loaded; l < L; ++l)
    for (int64_t i = 0; i < width; ++i) out[i][l] = Acc(0);
}

// rows [lanes][width] of T from in[i][l].
template <class Acc, int L, class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE void route_store_lanes(const Acc (*in)[L], int64_t width, int lanes, T* rows) {
  for (int l = 0; l < lanes; ++l)
    for (int64_t i = 0; i < width; ++i) rows[l * width + i] = T(in[i][l]);
}

// out[0..n) = scale * softmax(x[0..n)), per lane.
template <class Acc, int L>
MOH_HOST_DEVICE MOH_FORCE_INLINE void route_softmax(const Acc (*x)[L], int64_t n, Acc scale, Acc (*out)[L]) {
  Acc max[L], sum[L];
  for (int l = 0; l < L; ++l) {
    max[l] = x[0][l];
    sum[l] = 0;
  }
  for (int64_t i = 1; i < n; ++i)
    for (int l = 0; l < L; ++l) max[l] = x[i][l] > max[l] ? x[i][l] : max[l];
  for (int64_t i = 0; i < n; ++i)
    for (int l = 0; l < L; ++l) {
      out[i][l] = softmax_exp(x[i][l] - max[l]);
      sum[l] += out[i][l];
    }
  for (int l = 0; l < L; ++l) sum[l] = scale / sum[l];
  for (int64_t i = 0; i < n; ++i)
    for (int l = 0; l < L; ++l) out[i][l] *= sum[l];
}

// `take ? v : 0` by a bit mask: GCC sinks v's arithmetic into the branch of a plain ?:, which keeps the lane
// loops from vectorising (a float operation may trap, so it is not executed where the source skips it).
template <class Acc>
MOH_HOST_DEVICE MOH_FORCE_INLINE Acc route_keep(bool take, Acc v) {
  if constexpr (sizeof(Acc) == 4) {
    return bits_float(float_bits(v) & (0u - uint32_t(take)));
  } else {
    static_assert(sizeof(Acc) == 8, "route_keep: float or double");
#if defined(__CUDA_ARCH__)
    return __longlong_as_double(__double_as_longlong(v) & (0ll - (long long)take));
#else
    uint64_t u;
    std::memcpy(&u, &v, 8);
    u &= uint64_t(0) - uint64_t(take);
    std::memcpy(&v, &u, 8);
    return v;
#endif
  }
}

// Whether a ranks before b in topk's order (largest first, NaN largest).
template <class Acc>
MOH_HOST_DEVICE MOH_FORCE_INLINE bool route_ranks_before(Acc a, Acc b) {
  return ((a != a) & (b == b)) | (a > b);  // bitwise: no branches in the counting loops
}

// L tokens' routing values: their softmaxes, selections and renormalisations.
template <class Acc, int L>
struct RouteLanes {
  RouteShape shape;
  Acc p[kMaxRoutedHeads][L];    // router probabilities
  Acc s[kMaxRoutedHeads][L];    // hs * softmax(shared logits) (hs > 1), else 1
  Acc a[2][L];                  // 2 * softmax(stage logits) (hs > 0), else 1 (so a1 r = r)
  Acc picked[kMaxRoutedHeads][L];  // 1 where the head is selected, else 0
  Acc r[kMaxRoutedHeads][L];    // renormalised r_i (0 when unselected)
  Acc denom[L];                 // max(S, eps)
  Acc through[L];               // 1 where S >= eps (the gradient passes through S), else 0

  MOH_HOST_DEVICE MOH_FORCE_INLINE RouteLanes(const Acc (*x)[L], const RouteShape& sh, Acc eps) : shape(sh) {
    const int64_t e = sh.routed(), hl = sh.shared_logits();
    route_softmax(x, e, Acc(1), p);
    if (hl > 0) {
      route_softmax(x + e, hl, Acc(sh.shared), s);
    } else {
      for (int l = 0; l < L; ++l) s[0][l] = 1;  // hs == 1 (unused when hs == 0)
    }
    if (sh.shared > 0) {
      route_softmax(x + e + hl, 2, Acc(2), a);
    } else {
      for (int l = 0; l < L; ++l) a[0][l] = a[1][l] = 1;
    }
    // Head i is selected when fewer than K heads precede it in topk's order: j < i precedes unless i
    // ranks strictly before it (ties to the lower index), j > i only when it ranks strictly before i.
    // Branch-free compare-and-count loops (E^2 compares per lane), not K argmax passes.
    Acc sum[L];
    for (int l = 0; l < L; ++l) sum[l] = 0;
    for (int64_t i = 0; i < e; ++i) {
      int ahead[L];
      for (int l = 0; l < L; ++l) ahead[l] = 0;
      for (int64_t j = 0; j < i; ++j)
        for (int l = 0; l < L; ++l) ahead[l] += route_ranks_before(p[i][l], p[j][l]) ? 0 : 1;
      for (int64_t j = i + 1; j < e; ++j)
        for (int l = 0; l < L; ++l) ahead[l] += route_ranks_before(p[j][l], p[i][l]) ? 1 : 0;
      for (int l = 0; l < L; ++l) {
        picked[i][l] = route_keep(ahead[l] < sh.topk, Acc(1));
        sum[l] += route_keep(ahead[l] < sh.topk, p[i][l]);
      }
    }
    for (int l = 0; l < L; ++l) {
      through[l] = sum[l] < eps ? Acc(0) : Acc(1);
      denom[l] = sum[l] < eps ? eps : sum[l];
    }
    for (int64_t i = 0; i < e; ++i)
      for (int l = 0; l < L; ++l) r[i][l] = route_keep(selected(i, l), p[i][l] / denom[l] * Acc(sh.topk));
  }
  MOH_HOST_DEVICE MOH_FORCE_INLINE bool selected(int64_t i, int l) const { return picked[i][l] != Acc(0); }
};

// Forward of `lanes` <= L tokens from their logits rows [lanes][columns]: gates [lanes][H], probs and mask
// [lanes][E] (1 selected, 0 not), ids [lanes][K] ascending.
template <class Acc, int L, class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE void route_forward(const T* logits, int lanes, const RouteShape& shape, Acc eps,
                                                    T* gates, T* probs, T* mask, int64_t* ids) {
  const int64_t e = shape.routed(), hs = shape.shared, c = shape.columns(), k = shape.topk;
  Acc x[kMaxRouteColumns][L];
  route_load_lanes<Acc, L>(logits, c, lanes, x);
  const RouteLanes<Acc, L> t(x, shape, eps);
  route_store_lanes<Acc, L>(t.p, e, lanes, probs);
  route_store_lanes<Acc, L>(t.picked, e, lanes, mask);
  for (int l = 0; l < lanes; ++l) {  // every head written at the next free slot, kept when selected: no branch on it
    int64_t* row = ids + l * k;
    for (int64_t i = 0, j = 0; i < e && j < k; ++i) {
      row[j] = i;
      j += t.selected(i, l) ? 1 : 0;
    }
  }
  Acc g[kMaxRouteColumns][L];  // H <= 2 kMaxRoutedHeads rows
  for (int64_t j = 0; j < hs; ++j)
    for (int l = 0; l < L; ++l) g[j][l] = t.a[0][l] * t.s[j][l];
  for (int64_t i = 0; i < e; ++i)
    for (int l = 0; l < L; ++l) g[hs + i][l] = t.a[1][l] * t.r[i][l];
  route_store_lanes<Acc, L>(g, shape.heads, lanes, gates);
}

// Backward of `lanes` <= L tokens: d logits [lanes][columns] from d gates [lanes][H] and d probs [lanes][E]
// (either may be null: zero).
template <class Acc, int L, class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE void route_backward(const T* logits, const T* grad_gates, const T* grad_probs,
                                                     int lanes, const RouteShape& shape, Acc eps, T* grad_logits) {
  const int64_t e = shape.routed(), hs = shape.shared, hl = shape.shared_logits(), c = shape.columns();
  const Acc k = Acc(shape.topk);
  Acc x[kMaxRouteColumns][L];  // the logits, then their gradient
  route_load_lanes<Acc, L>(logits, c, lanes, x);
  const RouteLanes<Acc, L> t(x, shape, eps);
  Acc gg[kMaxRouteColumns][L], dr[kMaxRoutedHeads][L];
  route_load_lanes<Acc, L>(grad_gates, shape.heads, lanes, gg);
  route_load_lanes<Acc, L>(grad_probs, e, lanes, dr);  // d probs, then d p
  if (hs > 0) {
    // a = 2 softmax(stage): d stage_k = a_k (da_k - sum_j a_j da_j / 2); s = hs softmax(shared), ds_j = a0 d gate_j.
    Acc da0[L], da1[L], shared_dot[L];
    for (int l = 0; l < L; ++l) da0[l] = da1[l] = shared_dot[l] = 0;
    for (int64_t j = 0; j < hs; ++j)
      for (int l = 0; l < L; ++l) {
        da0[l] += gg[j][l] * t.s[j][l];
        shared_dot[l] += t.s[j][l] * t.a[0][l] * gg[j][l];
      }
    for (int64_t i = 0; i < e; ++i)
      for (int l = 0; l < L; ++l) da1[l] += gg[hs + i][l] * t.r[i][l];
    for (int l = 0; l < L; ++l) {
      const Acc stage_dot = (t.a[0][l] * da0[l] + t.a[1][l] * da1[l]) / Acc(2);
      x[e + hl][l] = t.a[0][l] * (da0[l] - stage_dot);
      x[e + hl + 1][l] = t.a[1][l] * (da1[l] - stage_dot);
      shared_dot[l] /= Acc(hs);
    }
    for (int64_t j = 0; j < hl; ++j)
      for (int l = 0; l < L; ++l) x[e + j][l] = t.s[j][l] * (t.a[0][l] * gg[j][l] - shared_dot[l]);
  }
  // r_i = K pm_i / D: d pm_i = K dr_i / D - [S >= eps] K sum_j dr_j pm_j / D^2; d p = m d pm + d probs.
  Acc dot[L], through_sum[L], per_dr[L], router_dot[L];
  for (int l = 0; l < L; ++l) dot[l] = router_dot[l] = 0;
  for (int64_t i = 0; i < e; ++i)
    for (int l = 0; l < L; ++l) {
      const Acc d = t.a[1][l] * gg[hs + i][l] * t.p[i][l];
      dot[l] += route_keep(t.selected(i, l), d);
    }
  for (int l = 0; l < L; ++l) {
    const Acc through_s = k * dot[l] / (t.denom[l] * t.denom[l]);
    through_sum[l] = route_keep(t.through[l] != Acc(0), through_s);
    per_dr[l] = k / t.denom[l];
  }
  for (int64_t i = 0; i < e; ++i)
    for (int l = 0; l < L; ++l) {
      const Acc dpm = per_dr[l] * (t.a[1][l] * gg[hs + i][l]) - through_sum[l];
      dr[i][l] += route_keep(t.selected(i, l), dpm);
      router_dot[l] += t.p[i][l] * dr[i][l];
    }
  for (int64_t i = 0; i < e; ++i)
    for (int l = 0; l < L; ++l) x[i][l] = t.p[i][l] * (dr[i][l] - router_dot[l]);
  route_store_lanes<Acc, L>(x, c, lanes, grad_logits);
}

}  // namespace moh
