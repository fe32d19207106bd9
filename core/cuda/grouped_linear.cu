// Grouped row projections on CUDA (contract: core/kernels/grouped_linear.h). The G + 1 group offsets
// are read back to the host (one small synchronising copy), rows that are picked through index are
// gathered into a packed [R, D] buffer by one kernel, and every non-empty group runs one cuBLASLt
// GEMM on its slice of that buffer. Results that land in rows shared between groups (gather_linear's
// grad_x, scatter_linear's output) are first written per packed row, then summed by destination:
// the packed rows are grouped by index (group_positions in index_groups.h, a stable sort), and each
// destination row is owned by one block that adds its rows in packed order, so there are no atomics
// and the result is the CPU's, sum order included. Bias rows and bias gradients are plain kernels
// with the same order.

#include <algorithm>
#include <vector>

#include "core/cuda/blas_lt.h"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/index_groups.h"
#include "core/cuda/launch.cuh"
#include "core/kernels/grouped_linear.h"

namespace moh::cuda {
namespace {

template <class T>
__global__ void gather_rows_kernel(T* dst, const T* src, const int64_t* index, int64_t rows, int64_t cols) {
  const int64_t total = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols;
    dst[i] = src[index[r] * cols + (i - r * cols)];
  }
}

// The group g of packed row r: offsets[g] <= r < offsets[g + 1] (a non-empty group).
__device__ int64_t group_of(const int64_t* offsets, int64_t groups, int64_t r) {
  int64_t lo = 0, hi = groups;  // offsets[lo] <= r < offsets[hi]
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (offsets[mid] <= r) lo = mid;
    else hi = mid;
  }
  return lo;
}

// out[r, j] = bias[group of r, j] for the packed rows.
template <class T>
__global__ void bias_rows_kernel(T* out, const T* bias, int64_t bias_stride0, int64_t bias_stride1,
                                 const int64_t* offsets, int64_t groups, int64_t rows, int64_t cols) {
  const int64_t total = rows * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / cols, j = i - r * cols;
    out[i] = bias[group_of(offsets, groups, r) * bias_stride0 + j * bias_stride1];
  }
}

// out[g, j] = sum of rows[r, j] over group g's packed rows, in row order (0 for an empty group).
template <class T>
__global__ void group_column_sums_kernel(T* out, const T* rows, const int64_t* offsets, int64_t groups, int64_t cols) {
  const int64_t total = groups * cols;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t g = i / cols, j = i - g * cols;
    acc_t<T> acc = 0;
    for (int64_t r = offsets[g]; r < offsets[g + 1]; ++r) acc += load_acc(rows[r * cols + j]);
    out[i] = store_acc<T>(acc);
  }
}

// dst[d, :] = sum of rows[p, :] over the packed rows p with index[p] == d, in packed order (zero
// when there are none). One block per destination row; order/start group the positions by index
// (index_groups.h).
template <class T>
__global__ void sum_rows_kernel(T* dst, const T* rows, const int64_t* order, const int64_t* start, int64_t num_dest,
                                int64_t cols) {
  for (int64_t d = blockIdx.x; d < num_dest; d += gridDim.x) {
    const int64_t begin = start[d], end = start[d + 1];
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      acc_t<T> acc = 0;
      for (int64_t p = begin; p < end; ++p) acc += load_acc(rows[order[p] * cols + j]);
      dst[d * cols + j] = store_acc<T>(acc);
    }
  }
}

std::vector<int64_t> host_offsets(const Tensor& offsets) {
  std::vector<int64_t> off(size_t(offsets.numel()));
  copy_device_to_host(off.data(), offsets.raw_data(), off.size() * sizeof(int64_t), offsets.device().index);
  return off;
}

// rows [index.numel(), src.size(1)] = src[index] for a contiguous src.
template <class T>
Tensor gather_rows(const Tensor& src, const Tensor& index) {
  Tensor out = Tensor::empty({index.numel(), src.size(1)}, src.dtype(), src.device());
  if (out.numel() == 0) return out;
  gather_rows_kernel<T><<<grid_for(out.numel()), kBlockThreads, 0, stream_for(src)>>>(
      out.data<T>(), src.data<T>(), index.data<int64_t>(), out.size(0), out.size(1));
  MOH_CUDA_CHECK_LAUNCH("gather_rows_kernel");
  return out;
}

// dst [num_dest, cols] (contiguous, overwritten) = the packed rows [R, cols] summed by index.
template <class T>
void sum_rows_by_index(const Tensor& dst, const Tensor& rows, const Tensor& index) {
  const int64_t num_dest = dst.size(0), cols = dst.size(1);
  if (dst.numel() == 0) return;
  const IndexGroups groups = group_positions(index, num_dest);
  const int threads = int(std::min<int64_t>(kBlockThreads, (cols + 31) / 32 * 32));
  sum_rows_kernel<T><<<grid_for(num_dest, 1), threads, 0, stream_for(dst)>>>(
      dst.data<T>(), rows.data<T>(), groups.order.data<int64_t>(), groups.start.data<int64_t>(), num_dest, cols);
  MOH_CUDA_CHECK_LAUNCH("sum_rows_kernel");
}

// Addressing of the weight blocks w [G, Dout, Din] (unit last stride).
template <class T>
struct Weights {
  const T* data;
  int64_t group_stride, ld;
  explicit Weights(const Tensor& w)
      : data(w.data<T>()), group_stride(w.stride(0)),
        ld(w.size(1) == 1 ? std::max(w.stride(1), w.size(2)) : w.stride(1)) {}
  GemmMatrix block(int64_t g, bool transposed) const { return {data + g * group_stride, ld, 0, transposed}; }
};

// d [m, n] (row stride ldd) = op(a) @ op(b) (+ d when accumulate), on the device of `like`.
void gemm(const Tensor& like, int64_t m, int64_t n, int64_t k, GemmMatrix a, GemmMatrix b, void* d, int64_t ldd,
          bool accumulate = false) {
  GemmDesc g;
  g.device = like.device().index;
  g.dtype = like.dtype();
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a;
  g.b = b;
  g.d = d;
  g.ldd = ldd;
  g.beta = accumulate ? 1.0 : 0.0;
  gemm_lt(g);
}

// A weight whose rows overlap (stride(1) < Din) is no GEMM operand: copy it.
Tensor gemm_weights(const Tensor& w) { return w.size(1) > 1 && w.stride(1) < w.size(2) ? w.contiguous() : w; }

// For every non-empty group g of the packed rows (offsets `off`): out_g [n, cols] = in_g [n, k] @ w_g^T
// (transposed: Din -> Dout) or @ w_g (Dout -> Din), added to out_g when accumulate. in and out are
// packed row-major buffers with k and cols columns.
template <class T>
void group_products(const Tensor& like, const std::vector<int64_t>& off, const T* in, int64_t k, const Weights<T>& w,
                    bool transposed, T* out, int64_t cols, bool accumulate = false) {
  for (size_t g = 0; g + 1 < off.size(); ++g) {
    const int64_t r0 = off[g], n = off[g + 1] - r0;
    if (n > 0)
      gemm(like, n, cols, k, {in + r0 * k, k}, w.block(int64_t(g), transposed), out + r0 * cols, cols, accumulate);
  }
}

// grad_w[g] [Dout, Din] = grad_rows_g^T @ inputs_g for every group g of the packed rows (grad_rows
// [R, Dout], inputs [R, Din]); zero for an empty group.
template <class T>
void group_weight_grads(const Tensor& grad_w, const std::vector<int64_t>& off, const T* grad_rows, const T* inputs,
                        int64_t dout, int64_t din) {
  for (size_t g = 0; g + 1 < off.size(); ++g) {
    const int64_t r0 = off[g], n = off[g + 1] - r0;
    T* gw = grad_w.data<T>() + int64_t(g) * dout * din;
    if (n > 0)
      gemm(grad_w, dout, din, n, {grad_rows + r0 * dout, dout, 0, true}, {inputs + r0 * din, din}, gw, din);
    else if (dout * din > 0)
      MOH_CUDA_CHECK(cudaMemsetAsync(gw, 0, size_t(dout * din) * sizeof(T), stream_for(grad_w)));
  }
}

}  // namespace

void gather_linear(const Tensor& out, const Tensor& x, const Tensor& index, const Tensor& offsets, const Tensor& w_in,
                   const Tensor& bias) {
  if (out.numel() == 0) return;
  DeviceGuard guard(x.device().index);
  const std::vector<int64_t> off = host_offsets(offsets);
  const Tensor w = gemm_weights(w_in);
  const int64_t groups = w.size(0), din = x.size(1), dout = w.size(1);
  dispatch_math_float(x.dtype(), "gather_linear", [&]<class T>() {
    const Tensor xs = gather_rows<T>(x, index);
    if (bias.defined()) {
      bias_rows_kernel<T><<<grid_for(out.numel()), kBlockThreads, 0, stream_for(out)>>>(
          out.data<T>(), bias.data<T>(), bias.stride(0), bias.stride(1), offsets.data<int64_t>(), groups, out.size(0),
          dout);
      MOH_CUDA_CHECK_LAUNCH("bias_rows_kernel");
    }
    group_products<T>(x, off, xs.data<T>(), din, Weights<T>(w), true, out.data<T>(), dout, bias.defined());
  });
}

void gather_linear_backward(const Tensor& grad_x, const Tensor& grad_w, const Tensor& grad_bias,
                            const Tensor& grad_out, const Tensor& x, const Tensor& index, const Tensor& offsets,
                            const Tensor& w_in) {
  DeviceGuard guard(x.device().index);
  const std::vector<int64_t> off = host_offsets(offsets);
  const Tensor w = gemm_weights(w_in);
  const int64_t groups = w.size(0), din = x.size(1), dout = w.size(1), total = index.numel();
  cudaStream_t stream = stream_for(x);
  dispatch_math_float(x.dtype(), "gather_linear_backward", [&]<class T>() {
    const Tensor xs = gather_rows<T>(x, index);
    const Tensor dx_rows = Tensor::empty({total, din}, x.dtype(), x.device());
    const T* go = grad_out.data<T>();
    // grad_w[g] = grad_out_g^T @ x_g ; dx rows = grad_out_g @ w_g
    group_weight_grads<T>(grad_w, off, go, xs.data<T>(), dout, din);
    group_products<T>(x, off, go, dout, Weights<T>(w), false, dx_rows.data<T>(), din);
    if (grad_bias.defined() && grad_bias.numel() > 0) {
      group_column_sums_kernel<T><<<grid_for(grad_bias.numel()), kBlockThreads, 0, stream>>>(
          grad_bias.data<T>(), go, offsets.data<int64_t>(), groups, dout);
      MOH_CUDA_CHECK_LAUNCH("group_column_sums_kernel");
    }
    sum_rows_by_index<T>(grad_x, dx_rows, index);
  });
}

void scatter_linear(const Tensor& out, const Tensor& src, const Tensor& index, const Tensor& offsets,
                    const Tensor& w_in) {
  if (out.numel() == 0) return;
  DeviceGuard guard(src.device().index);
  const std::vector<int64_t> off = host_offsets(offsets);
  const Tensor w = gemm_weights(w_in);
  const int64_t din = src.size(1), dout = w.size(1), total = index.numel();
  dispatch_math_float(src.dtype(), "scatter_linear", [&]<class T>() {
    const Tensor rows = Tensor::empty({total, dout}, src.dtype(), src.device());
    group_products<T>(src, off, src.data<T>(), din, Weights<T>(w), true, rows.data<T>(), dout);
    sum_rows_by_index<T>(out, rows, index);
  });
}

void scatter_linear_backward(const Tensor& grad_src, const Tensor& grad_w, const Tensor& grad_out,
                             const Tensor& src, const Tensor& index, const Tensor& offsets, const Tensor& w_in) {
  DeviceGuard guard(src.device().index);
  const std::vector<int64_t> off = host_offsets(offsets);
  const Tensor w = gemm_weights(w_in);
  const int64_t din = src.size(1), dout = w.size(1);
  dispatch_math_float(src.dtype(), "scatter_linear_backward", [&]<class T>() {
    const Tensor gos = gather_rows<T>(grad_out, index);
    // grad_src_g = grad_out_g @ w_g ; grad_w[g] = grad_out_g^T @ src_g
    group_products<T>(src, off, gos.data<T>(), dout, Weights<T>(w), false, grad_src.data<T>(), din);
    group_weight_grads<T>(grad_w, off, gos.data<T>(), src.data<T>(), dout, din);
  });
}

}  // namespace moh::cuda
