// Softmax and cross-entropy math shared by the CPU and CUDA backends.
// SoftmaxState is a running (max, sum of exp(x - max)) pair: update() folds in one value,
// merge() combines two partial states (chunks, threads, warps) so a row's log-sum-exp is found
// in one pass. `Acc` is the accumulator type (double on CPU, float in CUDA registers). A row of
// only -inf gives lse = -inf and softmax NaN, as in PyTorch.
#pragma once

#include <cmath>
#include <type_traits>

#include "core/macros.h"
#include "core/math/fast_exp.h"

namespace moh {

// exp for the softmax family: float uses the vectorisable fast_exp (relative error < 2.5e-7) and
// gives exactly 0 below -87 (so -inf, i.e. masked, logits get exactly zero probability); double
// uses the library exp.
template <class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE T softmax_exp(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return fast_exp_blend(x < -87.0f, 0.0f, fast_exp(x));  // a blend, not a branch: loops vectorise
  } else {
    using std::exp;
    return exp(x);
  }
}

template <class Acc>
struct SoftmaxState {
  Acc max = -INFINITY;
  Acc sum = 0;

  MOH_HOST_DEVICE MOH_FORCE_INLINE void update(Acc x) {
    using std::exp;
    if (x > max) {
      sum = sum * exp(max - x) + Acc(1);
      max = x;
    } else if (x != Acc(-INFINITY)) {  // -inf adds nothing (and would give NaN while max is -inf)
      sum += exp(x - max);
    }
  }

  // Symmetric to the bit, merge(a, b) == merge(b, a) whatever FMA contraction the compiler applies
  // (so a warp all-reduce leaves every lane the same state): the state with the larger max, then the
  // larger sum, is the one kept unscaled.
  MOH_HOST_DEVICE MOH_FORCE_INLINE void merge(const SoftmaxState& o) {
    if (o.sum == Acc(0)) return;
    if (sum == Acc(0)) {
      *this = o;
      return;
    }
    using std::exp;
    const bool keep_this = max > o.max || (max == o.max && sum >= o.sum);
    const SoftmaxState& hi = keep_this ? *this : o;
    const SoftmaxState& lo = keep_this ? o : *this;
    const Acc merged_max = hi.max, merged_sum = hi.sum + lo.sum * exp(lo.max - hi.max);
    max = merged_max;
    sum = merged_sum;
  }

  // log(sum_i exp(x_i)) of everything folded in so far.
  MOH_HOST_DEVICE MOH_FORCE_INLINE Acc log_sum_exp() const {
    using std::log;
    return max + log(sum);
  }
};

// d/dx of softmax: dx_i = y_i * (g_i - sum_j g_j y_j), with y = softmax(x); `dot` = sum_j g_j y_j.
template <class T, class Acc>
MOH_HOST_DEVICE MOH_FORCE_INLINE T softmax_grad(T g, T y, Acc dot) {
  return T(Acc(y) * (Acc(g) - dot));
}

// d/dx of log_softmax: dx_i = g_i - p_i * sum_j g_j, with p = exp(log_softmax(x)).
template <class T, class Acc>
MOH_HOST_DEVICE MOH_FORCE_INLINE T log_softmax_grad(T g, T p, Acc gsum) {
  return T(Acc(g) - Acc(p) * gsum);
}

// Cross entropy of one row with label smoothing ls over C classes (PyTorch's definition):
//   loss = (1 - ls) * (lse - x_target) + ls * (lse - mean_c x_c)
// where mean_c(-log p_c) = lse - mean_c x_c. Without smoothing the second term is skipped, so
// -inf logits of other classes (masking) do not turn the loss into 0 * inf = NaN.
template <class Acc>
MOH_HOST_DEVICE MOH_FORCE_INLINE Acc cross_entropy_row_loss(Acc lse, Acc x_target, Acc x_mean, Acc ls) {
  const Acc nll = lse - x_target;
  return ls == Acc(0) ? nll : (Acc(1) - ls) * nll + ls * (lse - x_mean);
}

// d loss / d x_c for one row, scaled by the upstream `scale`:
//   scale * (p_c - (1 - ls) * onehot_c - ls / C),  p_c = exp(x_c - lse), onehot_c = [c == target].
// onehot is a number (0 or 1), not a bool, so callers can run the row loop without a branch.
template <class Acc>
MOH_HOST_DEVICE MOH_FORCE_INLINE Acc cross_entropy_grad(Acc p, Acc onehot, Acc ls, Acc inv_c, Acc scale) {
  return scale * (p - (Acc(1) - ls) * onehot - ls * inv_c);
}

}  // namespace moh
