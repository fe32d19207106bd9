// The learned MoH router of one token (DESIGN.md "MoH attention", layers/moh_routing.h), forward and
// backward, shared by the CPU and CUDA backends of moh_route: each kernel runs these per token.
// A token's logits row is [E router | hs shared-gate logits when hs > 1 | 2 stage-gate logits when
// hs > 0] with E = H - hs routed heads and K of them selected:
//   p = softmax(router), m = top-K of p (NaN first, ties to the lower index, as topk), S = sum(p*m),
//   r = K * (p*m / max(S, eps)), s = hs * softmax(shared) (1 when hs == 1), a = 2 * softmax(stage),
//   gates = r (hs == 0) or [a0 * s, a1 * r].
// The backward takes d gates and d p (the balance loss reaches p) and returns d logits; the clamp at
// eps passes the gradient where S >= eps, as ag::clamp. A token keeps its softmaxes (E router and hs
// shared values, at most 128 each) and a 128-bit selection mask in registers or local memory.
// `Acc` is the arithmetic type (float for the float types, double for double); T the storage type.
#pragma once

#include <cstdint>

#include "core/macros.h"
#include "core/math/softmax_math.h"

namespace moh {

// The most routed (E) and shared (hs) heads a token's scratch holds.
inline constexpr int64_t kMaxRoutedHeads = 128;

struct RouteShape {
  int64_t heads = 0;   // H
  int64_t shared = 0;  // hs
  int64_t topk = 0;    // K >= 1
  MOH_HOST_DEVICE int64_t routed() const { return heads - shared; }
  MOH_HOST_DEVICE int64_t shared_logits() const { return shared > 1 ? shared : 0; }
  MOH_HOST_DEVICE int64_t columns() const { return routed() + shared_logits() + (shared > 0 ? 2 : 0); }
};

// out[0..n) = scale * softmax(x[0..n)).
template <class Acc, class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE void route_softmax(const T* x, int64_t n, Acc scale, Acc* out) {
  Acc max = Acc(x[0]), sum = 0;
  for (int64_t i = 1; i < n; ++i) max = Acc(x[i]) > max ? Acc(x[i]) : max;
  for (int64_t i = 0; i < n; ++i) {
    out[i] = softmax_exp(Acc(x[i]) - max);
    sum += out[i];
  }
  const Acc factor = scale / sum;
  for (int64_t i = 0; i < n; ++i) out[i] *= factor;
}

struct HeadMask {
  uint64_t bits[kMaxRoutedHeads / 64] = {};
  MOH_HOST_DEVICE MOH_FORCE_INLINE bool test(int64_t i) const { return (bits[i / 64] >> (i % 64)) & 1u; }
  MOH_HOST_DEVICE MOH_FORCE_INLINE void set(int64_t i) { bits[i / 64] |= uint64_t(1) << (i % 64); }
};

// Whether a ranks before b in topk's order (largest first, NaN largest).
template <class Acc>
MOH_HOST_DEVICE MOH_FORCE_INLINE bool route_ranks_before(Acc a, Acc b) {
  return ((a != a) & (b == b)) | (a > b);  // bitwise: no branches in the counting loops
}

// One token's routing values: its softmaxes, selection and renormalisation.
template <class Acc, class T>
struct RouteToken {
  RouteShape shape;
  Acc p[kMaxRoutedHeads];  // router probabilities
  Acc s[kMaxRoutedHeads];  // hs * softmax(shared logits) (hs > 1), else 1
  Acc a[2] = {1, 1};       // 2 * softmax(stage logits) (hs > 0)
  HeadMask selected;
  Acc denom = 0;         // max(S, eps)
  bool clamped = false;  // S < eps: no gradient through S

  MOH_HOST_DEVICE MOH_FORCE_INLINE RouteToken(const T* logits, const RouteShape& sh, Acc eps) : shape(sh) {
    const int64_t e = sh.routed(), hl = sh.shared_logits();
    route_softmax(logits, e, Acc(1), p);
    if (hl > 0)
      route_softmax(logits + e, hl, Acc(sh.shared), s);
    else if (sh.shared == 1)
      s[0] = 1;
    if (sh.shared > 0) route_softmax(logits + e + hl, 2, Acc(2), a);
    // Head i is selected when fewer than K heads precede it in topk's order: j < i precedes unless i
    // ranks strictly before it (ties to the lower index), j > i only when it ranks strictly before i.
    // Branch-free compare-and-count loops (E^2 compares, vectorisable), not K argmax passes.
    for (int64_t i = 0; i < e; ++i) {
      const Acc pi = p[i];
      int ahead = 0;
      for (int64_t j = 0; j < i; ++j) ahead += route_ranks_before(pi, p[j]) ? 0 : 1;
      for (int64_t j = i + 1; j < e; ++j) ahead += route_ranks_before(p[j], pi) ? 1 : 0;
      if (ahead < sh.topk) selected.set(i);
    }
    Acc sum = 0;
    for (int64_t i = 0; i < e; ++i)
      if (selected.test(i)) sum += p[i];
    clamped = sum < eps;
    denom = clamped ? eps : sum;
  }
  // r_i (0 when unselected).
  MOH_HOST_DEVICE MOH_FORCE_INLINE Acc renormalised(int64_t i) const {
    return selected.test(i) ? p[i] / denom * Acc(shape.topk) : Acc(0);
  }
};

// Forward of one token: gates [H], probs [E], mask [E] (1 selected, 0 not), ids [K] ascending.
template <class Acc, class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE void route_token_forward(const T* logits, const RouteShape& shape, Acc eps, T* gates,
                                                          T* probs, T* mask, int64_t* ids) {
  const RouteToken<Acc, T> t(logits, shape, eps);
  const int64_t e = shape.routed(), hs = shape.shared;
  for (int64_t i = 0, j = 0; i < e; ++i) {
    probs[i] = T(t.p[i]);
    mask[i] = T(t.selected.test(i) ? Acc(1) : Acc(0));
    if (t.selected.test(i)) ids[j++] = i;
  }
  const Acc routed_scale = hs > 0 ? t.a[1] : Acc(1);
  for (int64_t j = 0; j < hs; ++j) gates[j] = T(t.a[0] * t.s[j]);
  for (int64_t i = 0; i < e; ++i) gates[hs + i] = T(routed_scale * t.renormalised(i));
}

// Backward of one token: d logits [columns] from d gates [H] and d probs [E] (either may be null:
// zero).
template <class Acc, class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE void route_token_backward(const T* logits, const T* grad_gates, const T* grad_probs,
                                                           const RouteShape& shape, Acc eps, T* grad_logits) {
  const RouteToken<Acc, T> t(logits, shape, eps);
  const int64_t e = shape.routed(), hs = shape.shared, hl = shape.shared_logits(), k = shape.topk;
  const auto gate_grad = [&](int64_t h) { return grad_gates ? Acc(grad_gates[h]) : Acc(0); };
  Acc dr[kMaxRoutedHeads];
  for (int64_t i = 0; i < e; ++i) dr[i] = (hs > 0 ? t.a[1] : Acc(1)) * gate_grad(hs + i);
  if (hs > 0) {
    // a = 2 softmax(stage): d stage_k = a_k (da_k - sum_j a_j da_j / 2).
    Acc da0 = 0, da1 = 0;
    for (int64_t j = 0; j < hs; ++j) da0 += gate_grad(j) * t.s[j];
    for (int64_t i = 0; i < e; ++i) da1 += gate_grad(hs + i) * t.renormalised(i);
    const Acc stage_dot = (t.a[0] * da0 + t.a[1] * da1) / Acc(2);
    grad_logits[e + hl] = T(t.a[0] * (da0 - stage_dot));
    grad_logits[e + hl + 1] = T(t.a[1] * (da1 - stage_dot));
    if (hl > 0) {  // s = hs softmax(shared), ds_j = a0 d gate_j
      Acc shared_dot = 0;
      for (int64_t j = 0; j < hs; ++j) shared_dot += t.s[j] * t.a[0] * gate_grad(j);
      shared_dot /= Acc(hs);
      for (int64_t j = 0; j < hs; ++j) grad_logits[e + j] = T(t.s[j] * (t.a[0] * gate_grad(j) - shared_dot));
    }
  }
  // r_i = K pm_i / D: d pm_i = K dr_i / D - [S >= eps] K sum_j dr_j pm_j / D^2; d p = m d pm + d probs.
  Acc dot = 0;
  for (int64_t i = 0; i < e; ++i)
    if (t.selected.test(i)) dot += dr[i] * t.p[i];
  const Acc through_sum = t.clamped ? Acc(0) : Acc(k) * dot / (t.denom * t.denom), per_dr = Acc(k) / t.denom;
  Acc router_dot = 0;
  for (int64_t i = 0; i < e; ++i) {  // dr becomes d p
    const Acc dpm = t.selected.test(i) ? per_dr * dr[i] - through_sum : Acc(0);
    dr[i] = dpm + (grad_probs ? Acc(grad_probs[i]) : Acc(0));
    router_dot += t.p[i] * dr[i];
  }
  for (int64_t i = 0; i < e; ++i) grad_logits[i] = T(t.p[i] * (dr[i] - router_dot));
}

}  // namespace moh
