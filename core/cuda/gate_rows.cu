// CUDA gate_rows: one thread per row element for the scaled rows (forward, and grad_rows in the
// backward), one warp per row for grad_gates, whose dot product is summed by a fixed lane pattern and
// shuffle tree, so results are bitwise repeatable. The distinct index means no two rows write one
// output element; a scattering forward first zeroes its output, the backward its grad_gates.
#include "core/kernels/gate_rows.h"

#include "core/cuda/dispatch.cuh"
#include "core/cuda/launch.cuh"

namespace moh::cuda {
namespace {

// out[s(r), j] = rows[r, j] * gates[index[r]], s(r) = index[r] when scattering, else r.
template <class T>
__global__ void gated_rows_kernel(T* out, const T* rows, const T* gates, const int64_t* index, int64_t n, int64_t d,
                                  bool scatter) {
  const int64_t total = n * d;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / d, j = i - r * d, pair = index[r];
    out[(scatter ? pair : r) * d + j] = store_acc<T>(load_acc(rows[i]) * load_acc(gates[pair]));
  }
}

// grad_rows[r, j] = grad_out[s(r), j] * gates[index[r]].
template <class T>
__global__ void grad_rows_kernel(T* grad_rows, const T* grad_out, const T* gates, const int64_t* index, int64_t n,
                                 int64_t d, bool scatter) {
  const int64_t total = n * d;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / d, j = i - r * d, pair = index[r];
    grad_rows[i] = store_acc<T>(load_acc(grad_out[(scatter ? pair : r) * d + j]) * load_acc(gates[pair]));
  }
}

// grad_gates[index[r]] = sum_j grad_out[s(r), j] * rows[r, j]: warp w of the grid takes rows w, w + warps, ...
template <class T>
__global__ void grad_gates_kernel(T* grad_gates, const T* grad_out, const T* rows, const int64_t* index, int64_t n,
                                  int64_t d, bool scatter) {
  const int lane = int(threadIdx.x) % 32;
  const int64_t warps = int64_t(gridDim.x) * blockDim.x / 32;
  for (int64_t r = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; r < n; r += warps) {
    const int64_t pair = index[r];
    const T* up = grad_out + (scatter ? pair : r) * d;
    acc_t<T> acc = 0;
    for (int64_t j = lane; j < d; j += 32) acc += load_acc(up[j]) * load_acc(rows[r * d + j]);
    for (int mask = 16; mask > 0; mask /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, mask);
    if (lane == 0) grad_gates[pair] = store_acc<T>(acc);
  }
}

}  // namespace

void gate_rows(const Tensor& out, const Tensor& rows, const Tensor& gates, const Tensor& index, bool scatter) {
  const int64_t n = rows.size(0), d = rows.size(1);
  DeviceGuard guard(rows.device().index);
  cudaStream_t stream = stream_for(rows);
  if (scatter) MOH_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0, out.nbytes(), stream));
  if (n * d == 0) return;
  dispatch_math_float(rows.dtype(), "gate_rows", [&]<class T>() {
    gated_rows_kernel<T><<<grid_for(n * d), kBlockThreads, 0, stream>>>(
        out.data<T>(), rows.data<T>(), gates.data<T>(), index.data<int64_t>(), n, d, scatter);
    MOH_CUDA_CHECK_LAUNCH("gated_rows_kernel");
  });
}

void gate_rows_backward(const Tensor& grad_rows, const Tensor& grad_gates, const Tensor& grad_out, const Tensor& rows,
                        const Tensor& gates, const Tensor& index, bool scatter) {
  const int64_t n = rows.size(0), d = rows.size(1);
  DeviceGuard guard(rows.device().index);
  cudaStream_t stream = stream_for(rows);
  MOH_CUDA_CHECK(cudaMemsetAsync(grad_gates.raw_data(), 0, grad_gates.nbytes(), stream));
  if (n == 0) return;
  dispatch_math_float(rows.dtype(), "gate_rows_backward", [&]<class T>() {
    if (d > 0) {
      grad_rows_kernel<T><<<grid_for(n * d), kBlockThreads, 0, stream>>>(
          grad_rows.data<T>(), grad_out.data<T>(), gates.data<T>(), index.data<int64_t>(), n, d, scatter);
      MOH_CUDA_CHECK_LAUNCH("grad_rows_kernel");
    }
    grad_gates_kernel<T><<<grid_for(n * 32), kBlockThreads, 0, stream>>>(
        grad_gates.data<T>(), grad_out.data<T>(), rows.data<T>(), index.data<int64_t>(), n, d, scatter);
    MOH_CUDA_CHECK_LAUNCH("grad_gates_kernel");
  });
}

}  // namespace moh::cuda
