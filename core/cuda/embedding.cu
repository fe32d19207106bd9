// Embedding row gathers and the deterministic gradient on CUDA. The backward groups positions by
// row (a stable radix sort, index_groups.h) and gives each grad_weight element to one thread, which
// sums its row's grad_out entries in ascending position order: in double for float32/float64 (the
// CPU's order and precision, so the result is the CPU's bit for bit), in float for 16-bit floats.
#include "core/kernels/embedding.h"

#include <type_traits>

#include "core/cuda/dispatch.cuh"
#include "core/cuda/index_groups.h"
#include "core/cuda/launch.cuh"

namespace moh::cuda {
namespace {

template <class T>
__global__ void embedding_kernel(T* out, const T* weight, const int64_t* indices, int64_t n, int64_t dim,
                                 int64_t row_stride, int64_t col_stride) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n * dim; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t p = i / dim, j = i - p * dim;
    out[i] = weight[indices[p] * row_stride + j * col_stride];
  }
}

// grad_weight[r, j] = sum of grad_out[order[k], j] for k in [start[r], start[r + 1]).
template <class T>
__global__ void embedding_backward_kernel(T* grad_weight, const T* grad_out, const int64_t* order,
                                          const int64_t* start, int64_t rows, int64_t dim, int64_t g_row,
                                          int64_t g_col) {
  using Sum = std::conditional_t<is_half_v<T>, float, double>;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * dim;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / dim, j = i - r * dim;
    Sum acc = 0;
    for (int64_t k = start[r]; k < start[r + 1]; ++k) acc += Sum(grad_out[order[k] * g_row + j * g_col]);
    grad_weight[i] = T(acc);
  }
}

}  // namespace

void embedding(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  const int64_t n = indices.numel(), dim = weight.size(1);
  if (n == 0 || dim == 0) return;
  DeviceGuard guard(weight.device().index);
  dispatch_all(weight.dtype(), "embedding", [&]<class T>() {
    embedding_kernel<T><<<grid_for(n * dim), kBlockThreads, 0, stream_for(weight)>>>(
        out.data<T>(), weight.data<T>(), indices.data<int64_t>(), n, dim, weight.stride(0), weight.stride(1));
    MOH_CUDA_CHECK_LAUNCH("embedding_kernel");
  });
}

void embedding_backward(const Tensor& grad_weight, const Tensor& grad_out, const Tensor& indices) {
  const int64_t n = indices.numel(), rows = grad_weight.size(0), dim = grad_weight.size(1);
  if (rows == 0 || dim == 0) return;
  DeviceGuard guard(grad_weight.device().index);
  const IndexGroups groups = group_positions(indices.reshape({n}), rows);
  dispatch_math_float(grad_weight.dtype(), "embedding_backward", [&]<class T>() {
    embedding_backward_kernel<T><<<grid_for(rows * dim), kBlockThreads, 0, stream_for(grad_weight)>>>(
        grad_weight.data<T>(), n == 0 ? nullptr : grad_out.data<T>(), groups.order.data<int64_t>(),
        groups.start.data<int64_t>(), rows, dim, grad_out.stride(0), grad_out.stride(1));
    MOH_CUDA_CHECK_LAUNCH("embedding_backward_kernel");
  });
}

}  // namespace moh::cuda
