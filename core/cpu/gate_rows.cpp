// CPU gate_rows: every output row written once by one thread, each scaled by its pair's gate (forward,
// and the upstream row for grad_rows); grad_gates is one dot product per row in double, summed in
// lane_sum's fixed order. The scattered form walks the output's pairs in contiguous per-thread ranges
// through the inverse of the index (the row of each pair, or none), so each thread writes, and zeroes, only
// its own part of the [P, D] output. Results do not depend on the thread count.
#include "core/kernels/gate_rows.h"

#include <algorithm>
#include <vector>

#include "core/cpu/lane_reduce.h"
#include "core/cpu/strided_loop.h"
#include "core/dispatch.h"

namespace moh::cpu {
namespace {

// row_of[p] = the row naming pair p, or -1 (index's values are distinct, so rows never collide). One
// thread: the rows name pairs all over the array, so threads would share its cache lines.
std::vector<int64_t> rows_of_pairs(const int64_t* idx, int64_t rows, int64_t pairs) {
  std::vector<int64_t> row_of(size_t(pairs), -1);
  for (int64_t r = 0; r < rows; ++r) row_of[size_t(idx[r])] = r;
  return row_of;
}

}  // namespace

void gate_rows(const Tensor& out, const Tensor& rows, const Tensor& gates, const Tensor& index, bool scatter) {
  const int64_t n = rows.size(0), d = rows.size(1), pairs = gates.numel();
  dispatch_floating(rows.dtype(), "gate_rows", [&]<class T>() {
    const T *x = rows.data<T>(), *g = gates.data<T>();
    const int64_t* idx = index.data<int64_t>();
    T* o = out.data<T>();
    if (!scatter) {
#pragma omp parallel for schedule(static) if (n * d > kParallelGrain)
      for (int64_t r = 0; r < n; ++r) {
        const T gate = g[idx[r]];
        for (int64_t j = 0; j < d; ++j) o[r * d + j] = x[r * d + j] * gate;
      }
      return;
    }
    const std::vector<int64_t> row_of = rows_of_pairs(idx, n, pairs);
#pragma omp parallel for schedule(static) if (pairs * d > kParallelGrain)
    for (int64_t p = 0; p < pairs; ++p) {
      T* dst = o + p * d;
      const int64_t r = row_of[size_t(p)];
      if (r < 0) {
        std::fill(dst, dst + d, T(0));
        continue;
      }
      const T gate = g[p];
      for (int64_t j = 0; j < d; ++j) dst[j] = x[r * d + j] * gate;
    }
  });
}

void gate_rows_backward(const Tensor& grad_rows, const Tensor& grad_gates, const Tensor& grad_out, const Tensor& rows,
                        const Tensor& gates, const Tensor& index, bool scatter) {
  const int64_t n = rows.size(0), d = rows.size(1);
  dispatch_floating(rows.dtype(), "gate_rows_backward", [&]<class T>() {
    const T *x = rows.data<T>(), *g = gates.data<T>(), *go = grad_out.data<T>();
    const int64_t* idx = index.data<int64_t>();
    T *gx = grad_rows.data<T>(), *gg = grad_gates.data<T>();
    std::fill(gg, gg + grad_gates.numel(), T(0));
#pragma omp parallel for schedule(static) if (n * d > kParallelGrain)
    for (int64_t r = 0; r < n; ++r) {
      const T gate = g[idx[r]];
      const T *up = go + (scatter ? idx[r] : r) * d, *row = x + r * d;
      for (int64_t j = 0; j < d; ++j) gx[r * d + j] = up[j] * gate;
      gg[idx[r]] = T(lane_sum(d, [&](int64_t j) { return double(up[j]) * double(row[j]); }));
    }
  });
}

}  // namespace moh::cpu
