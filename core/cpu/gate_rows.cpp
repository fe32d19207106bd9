// CPU gate_rows: rows in parallel, each scaled by its pair's gate (forward, and the upstream row for
// grad_rows) and, for grad_gates, one dot product summed in order in double. Each output element is
// written by one row, so results do not depend on the thread count.
#include "core/kernels/gate_rows.h"

#include <algorithm>

#include "core/cpu/strided_loop.h"
#include "core/dispatch.h"

namespace moh::cpu {

void gate_rows(const Tensor& out, const Tensor& rows, const Tensor& gates, const Tensor& index, bool scatter) {
  const int64_t n = rows.size(0), d = rows.size(1);
  dispatch_floating(rows.dtype(), "gate_rows", [&]<class T>() {
    const T *x = rows.data<T>(), *g = gates.data<T>();
    const int64_t* idx = index.data<int64_t>();
    T* o = out.data<T>();
    if (scatter) std::fill(o, o + out.numel(), T(0));
#pragma omp parallel for schedule(static) if (n * d > kParallelGrain)
    for (int64_t r = 0; r < n; ++r) {
      const T gate = g[idx[r]];
      T* dst = o + (scatter ? idx[r] : r) * d;
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
      const T* up = go + (scatter ? idx[r] : r) * d;
      double dot = 0;
      for (int64_t j = 0; j < d; ++j) {
        gx[r * d + j] = up[j] * gate;
        dot += double(up[j]) * double(x[r * d + j]);
      }
      gg[idx[r]] = T(dot);
    }
  });
}

}  // namespace moh::cpu
