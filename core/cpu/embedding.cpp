// Embedding row copies and the grouped, race-free gradient accumulation (float32 rows are summed
// in double, then rounded once).
#include "core/kernels/embedding.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/cpu/strided_loop.h"
#include "core/dispatch.h"

namespace moh::cpu {

void embedding(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  const int64_t n = indices.numel(), dim = weight.size(1);
  if (n == 0 || dim == 0) return;
  const int64_t* idx = indices.data<int64_t>();
  const int64_t row_stride = weight.stride(0), col_stride = weight.stride(1);
  dispatch_all(weight.dtype(), "embedding", [&]<class T>() {
    const T* w = weight.data<T>();
    T* o = out.data<T>();
#pragma omp parallel for schedule(static) if (n * dim > kParallelGrain)
    for (int64_t p = 0; p < n; ++p) {
      const T* src = w + idx[p] * row_stride;
      T* dst = o + p * dim;
      if (col_stride == 1) {
        std::memcpy(dst, src, size_t(dim) * sizeof(T));
      } else {
        for (int64_t j = 0; j < dim; ++j) dst[j] = src[j * col_stride];
      }
    }
  });
}

void embedding_backward(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& indices) {
  const int64_t n = indices.numel(), rows = grad_weight.size(0), dim = grad_weight.size(1);
  if (rows == 0 || dim == 0) return;
  const int64_t* idx = indices.data<int64_t>();
  // Counting sort: positions of row r are order[start[r] .. start[r + 1]), ascending.
  std::vector<int64_t> start(static_cast<size_t>(rows + 1), 0), order(static_cast<size_t>(n));
  for (int64_t p = 0; p < n; ++p) ++start[size_t(idx[p] + 1)];
  for (int64_t r = 0; r < rows; ++r) start[size_t(r + 1)] += start[size_t(r)];
  {
    std::vector<int64_t> next(start.begin(), start.end() - 1);
    for (int64_t p = 0; p < n; ++p) order[size_t(next[size_t(idx[p])]++)] = p;
  }
  const int64_t g_row = n == 0 ? 0 : grad_out.stride(0), g_col = grad_out.stride(1);
  dispatch_floating(grad_weight.dtype(), "embedding_backward", [&]<class T>() {
    const T* g = n == 0 ? nullptr : grad_out.data<T>();
    T* gw = grad_weight.data<T>();
#pragma omp parallel if ((n + rows) * dim > kParallelGrain)
    {
      std::vector<double> acc(static_cast<size_t>(dim));
#pragma omp for schedule(dynamic, 16)
      for (int64_t r = 0; r < rows; ++r) {
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t k = start[size_t(r)]; k < start[size_t(r + 1)]; ++k) {
          const T* src = g + order[size_t(k)] * g_row;
          for (int64_t j = 0; j < dim; ++j) acc[size_t(j)] += double(src[j * g_col]);
        }
        for (int64_t j = 0; j < dim; ++j) gw[r * dim + j] = T(acc[size_t(j)]);
      }
    }
  });
}

}  // namespace moh::cpu
