// CUDA softmax / log_softmax and their backward (core/kernels/softmax.h, mirroring core/cpu/softmax.cpp).
// Tensors are contiguous, viewed as [outer, n, inner] with the lines along n. Each line is one
// reduction (forward: the online (max, sum exp) state of core/math/softmax_math.h; backward: the
// dot product sum g*y, or sum g for log_softmax) followed by an elementwise write, through an op
// (fold each element into a State, all-reduce, turn the State into per-Line constants, write
// each element). Two layouts:
//  - inner == 1 (lines along the last dim, contiguous): a warp per line up to kWarpRowMax
//    elements, the whole block for longer lines;
//  - inner > 1: a block takes tx_count neighbouring lines (neighbouring in memory) by ty_count
//    partners along n, so loads coalesce across lines; partners combine with tile_allreduce.
// Accumulation is in acc_t<T> (float, double for float64); the per-element math is the CPU's
// (softmax_exp, softmax_grad, log_softmax_grad).
#include <algorithm>
#include <cmath>

#include "core/cuda/block_reduce.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/kernels/softmax.h"
#include "core/math/softmax_math.h"

namespace moh::cuda {
namespace {

template <class T>
struct SoftmaxForward {
  using Acc = acc_t<T>;
  using State = SoftmaxState<Acc>;
  struct Line {
    Acc max, scale;  // scale: log(sum exp) for log_softmax, 1 / sum exp for softmax
  };
  const T* x;
  T* y;
  bool log;

  __device__ State init() const { return State{}; }
  __device__ static void merge(State& a, const State& b) { a.merge(b); }
  __device__ void fold(State& s, int64_t i) const { s.update(load_acc(x[i])); }
  __device__ Line line(const State& s) const { return {s.max, log ? std::log(s.sum) : Acc(1) / s.sum}; }
  __device__ void write(const Line& l, int64_t i) const {
    const Acc v = load_acc(x[i]) - l.max;
    y[i] = store_acc<T>(log ? v - l.scale : softmax_exp(v) * l.scale);
  }
};

template <class T>
struct SoftmaxBackward {
  using Acc = acc_t<T>;
  using State = Acc;
  using Line = Acc;
  const T* g;
  const T* y;
  T* gi;
  bool log;

  __device__ State init() const { return Acc(0); }
  __device__ static void merge(State& a, const State& b) { a += b; }
  __device__ void fold(State& s, int64_t i) const { s += log ? load_acc(g[i]) : load_acc(g[i]) * load_acc(y[i]); }
  __device__ Line line(const State& s) const { return s; }
  __device__ void write(const Line& s, int64_t i) const {
    const Acc gv = load_acc(g[i]), yv = load_acc(y[i]);
    gi[i] = store_acc<T>(log ? log_softmax_grad(gv, softmax_exp(yv), s) : softmax_grad(gv, yv, s));
  }
};

template <class Op>
struct Merge {
  __device__ void operator()(typename Op::State& a, const typename Op::State& b) const { Op::merge(a, b); }
};

// Lines along the last dim: line `row` is [row * n, row * n + n).
template <int G, class Op>
__global__ void rows_kernel(Op op, int64_t rows, int64_t n) {
  for_each_row<G>(rows, [&](int64_t row, int lane) {
    const int64_t base = row * n;
    typename Op::State s = op.init();
    for (int64_t i = lane; i < n; i += G) op.fold(s, base + i);
    const typename Op::Line l = op.line(group_allreduce<G>(s, Merge<Op>{}));
    for (int64_t i = lane; i < n; i += G) op.write(l, base + i);
  });
}

// Lines along a middle dim: line (o, k) is o * n * inner + k + i * inner for i in [0, n).
template <class Op>
__global__ void strided_kernel(Op op, int64_t outer, int64_t n, int64_t inner, int tx_count) {
  const int ty_count = kBlockThreads / tx_count;
  const int tx = int(threadIdx.x) % tx_count, ty = int(threadIdx.x) / tx_count;
  const int64_t tiles_per_outer = (inner + tx_count - 1) / tx_count;
  for (int64_t b = blockIdx.x; b < outer * tiles_per_outer; b += gridDim.x) {  // uniform across the block
    const int64_t o = b / tiles_per_outer, k = (b % tiles_per_outer) * tx_count + tx;
    const int64_t base = o * n * inner + k;
    typename Op::State s = op.init();
    if (k < inner)
      for (int64_t i = ty; i < n; i += ty_count) op.fold(s, base + i * inner);
    const typename Op::Line l = op.line(tile_allreduce(s, tx, ty, ty_count, Merge<Op>{}));
    if (k < inner)
      for (int64_t i = ty; i < n; i += ty_count) op.write(l, base + i * inner);
  }
}

template <class Op>
void launch_lines(const Op& op, const Tensor& like, int64_t dim) {
  const Shape& shape = like.shape();
  const int64_t total = like.numel();
  if (total == 0) return;
  const int64_t n = shape[size_t(dim)];
  int64_t inner = 1;
  for (size_t d = size_t(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t outer = total / (n * inner);
  DeviceGuard guard(like.device().index);
  const cudaStream_t stream = stream_for(like);
  if (inner == 1 && n <= kWarpRowMax) {
    rows_kernel<kWarp><<<row_grid<kWarp>(outer), kBlockThreads, 0, stream>>>(op, outer, n);
    MOH_CUDA_CHECK_LAUNCH("softmax rows_kernel<warp>");
  } else if (inner == 1) {
    rows_kernel<kBlockThreads><<<row_grid<kBlockThreads>(outer), kBlockThreads, 0, stream>>>(op, outer, n);
    MOH_CUDA_CHECK_LAUNCH("softmax rows_kernel<block>");
  } else {
    const int tx_count = pow2_at_least(inner, kWarp);
    const int64_t tiles = outer * ((inner + tx_count - 1) / tx_count);
    strided_kernel<<<unsigned(std::min<int64_t>(tiles, 65536)), kBlockThreads, 0, stream>>>(op, outer, n, inner,
                                                                                            tx_count);
    MOH_CUDA_CHECK_LAUNCH("softmax strided_kernel");
  }
}

}  // namespace

void softmax(const Tensor& x, const Tensor& out, int64_t dim, bool log) {
  dispatch_math_float(x.dtype(), log ? "log_softmax" : "softmax", [&]<class T>() {
    launch_lines(SoftmaxForward<T>{x.data<T>(), out.data<T>(), log}, x, dim);
  });
}

void softmax_backward(const Tensor& grad_out, const Tensor& out, const Tensor& grad_in, int64_t dim, bool log) {
  dispatch_math_float(out.dtype(), log ? "log_softmax_backward" : "softmax_backward", [&]<class T>() {
    launch_lines(SoftmaxBackward<T>{grad_out.data<T>(), out.data<T>(), grad_in.data<T>(), log}, out, dim);
  });
}

}  // namespace moh::cuda
