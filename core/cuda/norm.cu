// CUDA layer_norm / rms_norm forward and backward (core/kernels/norm.h, mirroring core/cpu/norm.cpp).
// x, out, grad_out, grad_x are contiguous [rows, D]; a row is handled by a warp (D up to
// kWarpRowMax) or by the whole block. Row statistics are two-pass (mean, then the mean squared
// deviation) in acc_t<T> (float, double for float64), like the CPU's, and are saved in acc_t<T>
// (float32 for the 16-bit types: core/ops/checks.h statistic_dtype); the backward's two row
// dot products are one all-reduce of a pair. grad_weight / grad_bias are column sums over rows:
// rows are cut into at most kMaxChunks fixed chunks, one thread per (chunk, column) sums its chunk
// (float32 in double, like the reductions) into a [chunks, D] buffer, and a second kernel adds the
// chunks in order, so results are bitwise reproducible without atomics.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/cuda/block_reduce.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/kernels/norm.h"

namespace moh::cuda {
namespace {

constexpr int64_t kMaxChunks = 128;

// Column-sum accumulator: double for float32 and float64, float for the 16-bit floats.
template <class T>
using col_acc_t = std::conditional_t<is_half_v<T>, float, double>;

template <class T>
struct ForwardArgs {
  const T* x;
  const T* w;     // or null
  const T* bias;  // or null
  T* y;
  acc_t<T>* mean;  // null for rms_norm
  acc_t<T>* rstd;
  int64_t rows, d;
  acc_t<T> eps;
};

template <class T>
struct BackwardArgs {
  const T* g;
  const T* x;
  const acc_t<T>* mean;  // null for rms_norm
  const acc_t<T>* rstd;
  const T* w;  // or null
  T* gx;
  int64_t rows, d;
};

template <int G, class T>
__global__ void forward_kernel(ForwardArgs<T> p) {
  using Acc = acc_t<T>;
  const int64_t d = p.d;
  for_each_row<G>(p.rows, [&](int64_t row, int lane) {
    const T* xr = p.x + row * d;
    Acc mu = 0;
    if (p.mean) {
      Acc s = 0;
      for (int64_t i = lane; i < d; i += G) s += load_acc(xr[i]);
      mu = group_allreduce<G>(s, Add{}) / Acc(d);
    }
    Acc ss = 0;
    for (int64_t i = lane; i < d; i += G) {
      const Acc c = load_acc(xr[i]) - mu;
      ss += c * c;
    }
    const Acc rs = Acc(1) / std::sqrt(group_allreduce<G>(ss, Add{}) / Acc(d) + p.eps);
    T* yr = p.y + row * d;
    for (int64_t i = lane; i < d; i += G) {
      Acc v = (load_acc(xr[i]) - mu) * rs;
      if (p.w) v *= load_acc(p.w[i]);
      if (p.bias) v += load_acc(p.bias[i]);
      yr[i] = store_acc<T>(v);
    }
    if (lane == 0) {
      if (p.mean) p.mean[row] = mu;
      p.rstd[row] = rs;
    }
  });
}

template <int G, class T>
__global__ void grad_x_kernel(BackwardArgs<T> p) {
  using Acc = acc_t<T>;
  const int64_t d = p.d;
  for_each_row<G>(p.rows, [&](int64_t row, int lane) {
    const T* gr = p.g + row * d;
    const T* xr = p.x + row * d;
    const Acc mu = p.mean ? p.mean[row] : Acc(0), rs = p.rstd[row];
    auto gy = [&](int64_t i) { return p.w ? load_acc(gr[i]) * load_acc(p.w[i]) : load_acc(gr[i]); };
    auto xhat = [&](int64_t i) { return (load_acc(xr[i]) - mu) * rs; };
    Pair<Acc> s{0, 0};  // sum gy, sum gy * xhat
    for (int64_t i = lane; i < d; i += G) {
      const Acc v = gy(i);
      s.a += v;
      s.b += v * xhat(i);
    }
    s = group_allreduce<G>(s, Add{});
    const Acc a = p.mean ? s.a / Acc(d) : Acc(0), b = s.b / Acc(d);
    T* gxr = p.gx + row * d;
    for (int64_t i = lane; i < d; i += G) gxr[i] = store_acc<T>(rs * (gy(i) - a - xhat(i) * b));
  });
}

// partial_w/partial_b[chunk * d + i] = sum over the chunk's rows of g * xhat / g in column i.
template <class T>
__global__ void column_partials_kernel(const T* g, const T* x, const acc_t<T>* mean, const acc_t<T>* rstd,
                                       col_acc_t<T>* partial_w,
                                       col_acc_t<T>* partial_b, int64_t rows, int64_t d, int64_t rows_per_chunk,
                                       int64_t chunks) {
  using Acc = acc_t<T>;
  using Col = col_acc_t<T>;
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < chunks * d;
       t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t chunk = t / d, i = t % d;
    const int64_t r1 = std::min(rows, (chunk + 1) * rows_per_chunk);
    Col sw = 0, sb = 0;
    for (int64_t r = chunk * rows_per_chunk; r < r1; ++r) {
      const Acc gv = load_acc(g[r * d + i]);
      if (partial_w) {
        const Acc mu = mean ? mean[r] : Acc(0);
        sw += Col(gv) * Col((load_acc(x[r * d + i]) - mu) * rstd[r]);
      }
      sb += Col(gv);
    }
    if (partial_w) partial_w[t] = sw;
    if (partial_b) partial_b[t] = sb;
  }
}

template <class T>
__global__ void sum_chunks_kernel(const col_acc_t<T>* partial, T* out, int64_t d, int64_t chunks) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < d; i += int64_t(gridDim.x) * blockDim.x) {
    col_acc_t<T> s = 0;
    for (int64_t c = 0; c < chunks; ++c) s += partial[c * d + i];
    out[i] = store_acc<T>(acc_t<T>(s));
  }
}

template <class T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

template <class T>
void column_sums(const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                 const Tensor& grad_weight, const Tensor& grad_bias, int64_t rows, int64_t d, cudaStream_t stream) {
  using Col = col_acc_t<T>;
  if (!grad_weight.defined() && !grad_bias.defined()) return;
  const int64_t chunks0 = std::max<int64_t>(1, std::min(rows, kMaxChunks));
  const int64_t rows_per_chunk = std::max<int64_t>(1, (rows + chunks0 - 1) / chunks0);
  const int64_t chunks = std::max<int64_t>(1, (rows + rows_per_chunk - 1) / rows_per_chunk);
  auto buffer = [&](const Tensor& want) {
    return want.defined() ? Tensor::empty({chunks * d}, dtype_of<Col>, x.device()) : Tensor();
  };
  const Tensor pw = buffer(grad_weight), pb = buffer(grad_bias);
  Col* ppw = pw.defined() ? pw.data<Col>() : nullptr;
  Col* ppb = pb.defined() ? pb.data<Col>() : nullptr;
  column_partials_kernel<T><<<grid_for(chunks * d), kBlockThreads, 0, stream>>>(
      grad_out.data<T>(), x.data<T>(), data_or_null<acc_t<T>>(mean), rstd.data<acc_t<T>>(), ppw, ppb, rows, d,
      rows_per_chunk, chunks);
  MOH_CUDA_CHECK_LAUNCH("norm column_partials_kernel");
  auto finish = [&](const Col* part, const Tensor& dst) {
    if (!part) return;
    sum_chunks_kernel<T><<<grid_for(d), kBlockThreads, 0, stream>>>(part, dst.data<T>(), d, chunks);
    MOH_CUDA_CHECK_LAUNCH("norm sum_chunks_kernel");
  };
  finish(ppw, grad_weight);
  finish(ppb, grad_bias);
}

}  // namespace

void norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out,
                  const Tensor& mean, const Tensor& rstd) {
  const int64_t d = x.size(-1), rows = x.numel() / d;
  dispatch_math_float(x.dtype(), mean.defined() ? "layer_norm" : "rms_norm", [&]<class T>() {
    if (rows == 0) return;
    DeviceGuard guard(x.device().index);
    const cudaStream_t stream = stream_for(x);
    const ForwardArgs<T> p{x.data<T>(), data_or_null<T>(weight), data_or_null<T>(bias), out.data<T>(),
                           mean.defined() ? mean.data<acc_t<T>>() : nullptr, rstd.data<acc_t<T>>(), rows, d,
                           acc_t<T>(eps)};
    if (d <= kWarpRowMax)
      forward_kernel<kWarp><<<row_grid<kWarp>(rows), kBlockThreads, 0, stream>>>(p);
    else
      forward_kernel<kBlockThreads><<<row_grid<kBlockThreads>(rows), kBlockThreads, 0, stream>>>(p);
    MOH_CUDA_CHECK_LAUNCH("norm forward_kernel");
  });
}

void norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                   const Tensor& weight, const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias) {
  const int64_t d = x.size(-1), rows = x.numel() / d;
  dispatch_math_float(x.dtype(), mean.defined() ? "layer_norm_backward" : "rms_norm_backward", [&]<class T>() {
    DeviceGuard guard(x.device().index);
    const cudaStream_t stream = stream_for(x);
    if (rows > 0) {
      const BackwardArgs<T> p{grad_out.data<T>(), x.data<T>(), data_or_null<acc_t<T>>(mean), rstd.data<acc_t<T>>(),
                              data_or_null<T>(weight), grad_x.data<T>(), rows, d};
      if (d <= kWarpRowMax)
        grad_x_kernel<kWarp><<<row_grid<kWarp>(rows), kBlockThreads, 0, stream>>>(p);
      else
        grad_x_kernel<kBlockThreads><<<row_grid<kBlockThreads>(rows), kBlockThreads, 0, stream>>>(p);
      MOH_CUDA_CHECK_LAUNCH("norm grad_x_kernel");
    }
    column_sums<T>(grad_out, x, mean, rstd, grad_weight, grad_bias, rows, d, stream);
  });
}

}  // namespace moh::cuda
