// CUDA group_norm forward and backward (core/kernels/group_norm.h, mirroring core/cpu/group_norm.cpp).
// A row (one sample's group, C / groups * S values) is handled by a warp (up to kWarpRowMax values)
// or by the whole block. Statistics in acc_t<T> from one pass of shifted sums (x - K and (x - K)^2,
// K the row's first value), as on the CPU. Backward: per (sample, channel) plane the sums of g and
// g * (x - mean) (one row-reduce kernel over planes), then grad_x per row from its planes' sums, then
// grad_weight / grad_bias per channel summed over samples in order by one thread. No atomics: every
// result is bitwise reproducible.
#include <algorithm>
#include <cmath>

#include "core/cuda/block_reduce.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/kernels/group_norm.h"

namespace moh::cuda {
namespace {

struct Layout {
  int64_t n, c, s, groups, cg;
  __host__ __device__ int64_t rows() const { return n * groups; }
  __host__ __device__ int64_t row_size() const { return cg * s; }
  __host__ __device__ int64_t planes() const { return n * c; }
};

Layout layout(const Tensor& x, int64_t groups) {
  const int64_t n = x.size(0), c = x.size(1);
  return {n, c, x.numel() / (n * c), groups, c / groups};
}

template <class T>
struct ForwardArgs {
  const T* x;
  const T* w;     // or null
  const T* bias;  // or null
  T* y;
  acc_t<T>* mean;
  acc_t<T>* rstd;
  Layout l;
  acc_t<T> eps;
};

template <int G, class T>
__global__ void forward_kernel(ForwardArgs<T> p) {
  using Acc = acc_t<T>;
  const int64_t d = p.l.row_size();
  for_each_row<G>(p.l.rows(), [&](int64_t row, int lane) {
    const T* xr = p.x + row * d;
    const Acc shift = load_acc(xr[0]);
    Pair<Acc> s{0, 0};
    for (int64_t i = lane; i < d; i += G) {
      const Acc v = load_acc(xr[i]) - shift;
      s.a += v;
      s.b += v * v;
    }
    s = group_allreduce<G>(s, Add{});
    const Acc centre = s.a / Acc(d);
    const Acc var = std::max(Acc(0), s.b / Acc(d) - centre * centre);
    const Acc mu = shift + centre, rs = Acc(1) / std::sqrt(var + p.eps);
    const int64_t c0 = (row % p.l.groups) * p.l.cg;
    T* yr = p.y + row * d;
    for (int64_t i = lane; i < d; i += G) {
      const int64_t c = c0 + i / p.l.s;
      const Acc scale = p.w ? rs * load_acc(p.w[c]) : rs;
      const Acc offset = (p.bias ? load_acc(p.bias[c]) : Acc(0)) - mu * scale;
      yr[i] = store_acc<T>(load_acc(xr[i]) * scale + offset);
    }
    if (lane == 0) {
      p.mean[row] = mu;
      p.rstd[row] = rs;
    }
  });
}

// sum_g[p] = sum of g over plane p, sum_gx[p] = sum of g * (x - mean) (planes of S values).
template <int G, class T>
__global__ void plane_sums_kernel(const T* g, const T* x, const acc_t<T>* mean, acc_t<T>* sum_g, acc_t<T>* sum_gx,
                                  Layout l) {
  using Acc = acc_t<T>;
  for_each_row<G>(l.planes(), [&](int64_t plane, int lane) {
    const Acc mu = mean[(plane / l.c) * l.groups + (plane % l.c) / l.cg];
    const T* gp = g + plane * l.s;
    const T* xp = x + plane * l.s;
    Pair<Acc> s{0, 0};
    for (int64_t i = lane; i < l.s; i += G) {
      const Acc gv = load_acc(gp[i]);
      s.a += gv;
      s.b += gv * (load_acc(xp[i]) - mu);
    }
    s = group_allreduce<G>(s, Add{});
    if (lane == 0) {
      sum_g[plane] = s.a;
      sum_gx[plane] = s.b;
    }
  });
}

template <class T>
struct GradXArgs {
  const T* g;
  const T* x;
  const acc_t<T>* mean;
  const acc_t<T>* rstd;
  const T* w;  // or null
  const acc_t<T>* sum_g;
  const acc_t<T>* sum_gx;
  T* gx;
  Layout l;
};

// dx = rstd * (g * w - a - xhat * b), a = mean(g * w), b = mean(g * w * xhat) over the row.
template <int G, class T>
__global__ void grad_x_kernel(GradXArgs<T> p) {
  using Acc = acc_t<T>;
  const int64_t d = p.l.row_size();
  for_each_row<G>(p.l.rows(), [&](int64_t row, int lane) {
    const int64_t n = row / p.l.groups, c0 = (row % p.l.groups) * p.l.cg;
    const Acc mu = p.mean[row], rs = p.rstd[row];
    Acc gy = 0, gy_xhat = 0;  // every lane sums the group's planes in the same order
    for (int64_t c = c0; c < c0 + p.l.cg; ++c) {
      const Acc w = p.w ? load_acc(p.w[c]) : Acc(1);
      gy += w * p.sum_g[n * p.l.c + c];
      gy_xhat += w * p.sum_gx[n * p.l.c + c];
    }
    const Acc a = gy / Acc(d), b = gy_xhat * rs / Acc(d);
    const Acc x_scale = rs * rs * b, offset = mu * x_scale - rs * a;
    const T* gr = p.g + row * d;
    const T* xr = p.x + row * d;
    T* gxr = p.gx + row * d;
    for (int64_t i = lane; i < d; i += G) {
      const int64_t c = c0 + i / p.l.s;
      const Acc g_scale = p.w ? rs * load_acc(p.w[c]) : rs;
      gxr[i] = store_acc<T>(load_acc(gr[i]) * g_scale - load_acc(xr[i]) * x_scale + offset);
    }
  });
}

// grad_weight[c] = sum_n rstd * sum_gx, grad_bias[c] = sum_n sum_g, samples in order.
template <class T>
__global__ void channel_sums_kernel(const acc_t<T>* sum_g, const acc_t<T>* sum_gx, const acc_t<T>* rstd, T* gw,
                                    T* gb, Layout l) {
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < l.c; c += int64_t(gridDim.x) * blockDim.x) {
    acc_t<T> w = 0, b = 0;
    for (int64_t n = 0; n < l.n; ++n) {
      w += sum_gx[n * l.c + c] * rstd[n * l.groups + c / l.cg];
      b += sum_g[n * l.c + c];
    }
    if (gw) gw[c] = store_acc<T>(w);
    if (gb) gb[c] = store_acc<T>(b);
  }
}

template <class T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

void group_norm_forward(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias, double eps,
                        const Tensor& out, const Tensor& mean, const Tensor& rstd) {
  const Layout l = layout(x, groups);
  dispatch_math_float(x.dtype(), "group_norm", [&]<class T>() {
    DeviceGuard guard(x.device().index);
    const cudaStream_t stream = stream_for(x);
    const ForwardArgs<T> p{x.data<T>(), data_or_null<T>(weight), data_or_null<T>(bias), out.data<T>(),
                           mean.data<acc_t<T>>(), rstd.data<acc_t<T>>(), l, acc_t<T>(eps)};
    if (l.row_size() <= kWarpRowMax)
      forward_kernel<kWarp><<<row_grid<kWarp>(l.rows()), kBlockThreads, 0, stream>>>(p);
    else
      forward_kernel<kBlockThreads><<<row_grid<kBlockThreads>(l.rows()), kBlockThreads, 0, stream>>>(p);
    MOH_CUDA_CHECK_LAUNCH("group_norm forward_kernel");
  });
}

void group_norm_backward(const Tensor& grad_out, const Tensor& x, int64_t groups, const Tensor& mean,
                         const Tensor& rstd, const Tensor& weight, const Tensor& grad_x, const Tensor& grad_weight,
                         const Tensor& grad_bias) {
  const Layout l = layout(x, groups);
  dispatch_math_float(x.dtype(), "group_norm_backward", [&]<class T>() {
    using Acc = acc_t<T>;
    DeviceGuard guard(x.device().index);
    const cudaStream_t stream = stream_for(x);
    const Tensor sums = Tensor::empty({2 * l.planes()}, dtype_of<Acc>, x.device());
    Acc* sum_g = sums.data<Acc>();
    Acc* sum_gx = sum_g + l.planes();
    const T *g = grad_out.data<T>(), *xp = x.data<T>();
    const Acc *pmean = mean.data<Acc>(), *prstd = rstd.data<Acc>();
    if (l.s <= kWarpRowMax)
      plane_sums_kernel<kWarp><<<row_grid<kWarp>(l.planes()), kBlockThreads, 0, stream>>>(g, xp, pmean, sum_g, sum_gx,
                                                                                          l);
    else
      plane_sums_kernel<kBlockThreads><<<row_grid<kBlockThreads>(l.planes()), kBlockThreads, 0, stream>>>(
          g, xp, pmean, sum_g, sum_gx, l);
    MOH_CUDA_CHECK_LAUNCH("group_norm plane_sums_kernel");
    const GradXArgs<T> p{g, xp, pmean, prstd, data_or_null<T>(weight), sum_g, sum_gx, grad_x.data<T>(), l};
    if (l.row_size() <= kWarpRowMax)
      grad_x_kernel<kWarp><<<row_grid<kWarp>(l.rows()), kBlockThreads, 0, stream>>>(p);
    else
      grad_x_kernel<kBlockThreads><<<row_grid<kBlockThreads>(l.rows()), kBlockThreads, 0, stream>>>(p);
    MOH_CUDA_CHECK_LAUNCH("group_norm grad_x_kernel");
    if (grad_weight.defined() || grad_bias.defined()) {
      T* gw = grad_weight.defined() ? grad_weight.data<T>() : nullptr;
      T* gb = grad_bias.defined() ? grad_bias.data<T>() : nullptr;
      channel_sums_kernel<T><<<grid_for(l.c), kBlockThreads, 0, stream>>>(sum_g, sum_gx, prstd, gw, gb, l);
      MOH_CUDA_CHECK_LAUNCH("group_norm channel_sums_kernel");
    }
  });
}

}  // namespace moh::cuda
