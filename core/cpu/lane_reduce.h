// Row reductions split across 8 independent lanes, so the compiler vectorises them (a single
// running sum or max is a serial dependency chain it may not reorder) while the order stays
// fixed: results do not depend on threads or alignment. Used by the softmax, norm and
// cross-entropy kernels.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/macros.h"

namespace moh::cpu {

inline constexpr int64_t kLanes = 8;

// sum_{i < n} term(i) in double, with term(i) -> double.
template <class Term>
MOH_FORCE_INLINE double lane_sum(int64_t n, Term&& term) {
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t k = 0; k < kLanes; ++k) lane[k] += term(i + k);
  double tail = 0;
  for (; i < n; ++i) tail += term(i);
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7])) + tail;
}

// Two sums in one pass: {sum_{i < n} first(i), sum_{i < n} second(i)}, each in the order of lane_sum.
struct SumPair {
  double first, second;
};
template <class First, class Second>
MOH_FORCE_INLINE SumPair lane_sum_pair(int64_t n, First&& first, Second&& second) {
  double a[kLanes] = {}, b[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t k = 0; k < kLanes; ++k) {
      a[k] += first(i + k);
      b[k] += second(i + k);
    }
  double tail_a = 0, tail_b = 0;
  for (; i < n; ++i) tail_a += first(i), tail_b += second(i);
  auto fold = [](const double* l, double tail) {
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7])) + tail;
  };
  return {fold(a, tail_a), fold(b, tail_b)};
}

// max_{i < n} x[i] (-inf when n == 0). NaN entries are skipped (callers see them through the sum).
template <class T>
MOH_FORCE_INLINE T lane_max(const T* x, int64_t n) {
  T lane[kLanes];
  for (int64_t k = 0; k < kLanes; ++k) lane[k] = T(-INFINITY);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t k = 0; k < kLanes; ++k) lane[k] = x[i + k] > lane[k] ? x[i + k] : lane[k];
  for (; i < n; ++i) lane[0] = x[i] > lane[0] ? x[i] : lane[0];
  T m = lane[0];
  for (int64_t k = 1; k < kLanes; ++k) m = lane[k] > m ? lane[k] : m;
  return m;
}

}  // namespace moh::cpu
