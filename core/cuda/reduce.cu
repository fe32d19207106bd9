// CUDA reduction engine (core/kernels/reduce.h, mirroring core/cpu/reduce.cpp). x is split into kept
// dims (one per output element m) and reduced dims (flat index r), both ordered by decreasing x
// stride and addressed through StridedOffsets. A block of kBlockThreads threads holds tx_count
// outputs by ty_count partners each; the partners fold strided runs of r and then combine with a
// fixed tree (tile_allreduce). Two layouts, as the CPU's two paths:
//  - reduce-fastest: the reduced dims hold x's smallest stride; partners are neighbouring threads,
//    so a warp reads contiguous runs of one output's range;
//  - output-fastest: a kept dim holds the smallest stride (sums over rows, e.g. bias grads);
//    neighbouring threads own neighbouring outputs and read along memory.
// With few output tiles the reduced range is cut into chunks whose partial accumulators go to a
// [chunks, M] buffer and are merged in chunk order by a second kernel. The chunk count depends on
// the shapes only, so results are bitwise reproducible. float32 accumulates in double, ints in
// int64, bfloat16/float16 in float; amax/amin propagate NaN; argmax keeps the first maximum (and
// the first NaN), as on the CPU.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <type_traits>

#include "core/cuda/block_reduce.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/runtime.h"
#include "core/kernels/reduce.h"

namespace moh::cuda {
namespace {

constexpr int64_t kTargetBlocks = 512;  // with fewer output tiles than this the reduced range is split
constexpr int64_t kMinPerThread = 32;   // reduced elements per thread before another chunk pays off
constexpr int64_t kMaxChunks = 1024;

// The type a kernel compares and adds values in: float for the 16-bit floats, T otherwise.
template <class T>
using val_t = std::conditional_t<is_half_v<T>, float, T>;

template <class V>
__device__ __forceinline__ bool is_nan(V v) {
  if constexpr (std::is_floating_point_v<V>)
    return v != v;
  else
    return false;
}

// ---------------------------------------------------------------------------- policies

template <class T>
struct SumPolicy {
  using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, std::conditional_t<is_half_v<T>, float, double>>;
  using Out = T;
  int64_t divisor = 1;  // the reduced count for mean
  __device__ Acc init() const { return Acc(0); }
  __device__ void step(Acc& a, T v, int64_t) const { a += Acc(val_t<T>(v)); }
  __device__ void merge(Acc& a, const Acc& b) const { a += b; }
  __device__ Out finish(const Acc& a) const {
    if constexpr (std::is_integral_v<T>)
      return T(a);
    else
      return T(a / Acc(divisor));
  }
};

template <class T, bool kMax>
struct ExtremePolicy {
  using Acc = val_t<T>;
  using Out = T;
  __device__ Acc init() const {
    using L = std::numeric_limits<Acc>;
    if constexpr (L::has_infinity)
      return kMax ? -L::infinity() : L::infinity();
    else
      return kMax ? L::lowest() : L::max();
  }
  __device__ void fold(Acc& a, Acc v) const {
    if ((kMax ? v > a : v < a) || is_nan(v)) a = v;
  }
  __device__ void step(Acc& a, T v, int64_t) const { fold(a, Acc(v)); }
  __device__ void merge(Acc& a, const Acc& b) const {
    if (!is_nan(a)) fold(a, b);
  }
  __device__ Out finish(const Acc& a) const { return T(a); }
};

template <class T>
struct ArgmaxPolicy {
  using V = val_t<T>;
  struct Acc {
    V v;
    int64_t i;  // -1 while empty
  };
  using Out = int64_t;
  __device__ Acc init() const { return {V(0), -1}; }
  __device__ void step(Acc& a, T x, int64_t r) const {  // r increases along one accumulator
    const V v = V(x);
    if (a.i < 0 || v > a.v || (is_nan(v) && !is_nan(a.v))) a = {v, r};
  }
  __device__ void merge(Acc& a, const Acc& b) const {
    if (b.i < 0) return;
    if (a.i < 0) {
      a = b;
      return;
    }
    const bool an = is_nan(a.v), bn = is_nan(b.v);
    const bool take = (an || bn) ? (bn && (!an || b.i < a.i)) : (b.v > a.v || (b.v == a.v && b.i < a.i));
    if (take) a = b;
  }
  __device__ Out finish(const Acc& a) const { return a.i; }
};

// ---------------------------------------------------------------------------- layout

struct Layout {
  StridedOffsets<2> kept;  // output m -> (out offset, x offset)
  StridedOffsets<1> red;   // reduced index r -> x offset
  int64_t M = 0, R = 0;
  int tx_count = 1, ty_count = 1;
  bool out_fastest = false;
  int64_t chunks = 1, chunk = 0;  // the reduced range is cut into `chunks` runs of `chunk`

  __device__ __forceinline__ int64_t red_offset(int64_t r) const {
    if (red.ndim == 0) return 0;
    if (red.ndim == 1) return r * red.strides[0][0];
    int64_t o[1];
    red.offsets(r, o);
    return o[0];
  }
  __host__ __device__ int64_t tiles() const { return (M + tx_count - 1) / tx_count; }
};

Layout make_layout(const Tensor& out, const Tensor& x, const std::vector<bool>& reduced) {
  const size_t nd = x.shape().size();
  std::vector<size_t> order(nd);
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return std::abs(x.strides()[a]) > std::abs(x.strides()[b]); });
  Shape kept_shape, red_shape;
  std::vector<int64_t> x_strides, out_strides;
  for (size_t d : order) {
    kept_shape.push_back(reduced[d] ? 1 : x.shape()[d]);
    red_shape.push_back(reduced[d] ? x.shape()[d] : 1);
    x_strides.push_back(x.strides()[d]);
    out_strides.push_back(out.strides()[d]);
  }
  // x over the kept dims and over the reduced dims, and out over the kept dims (stride lists, not views:
  // a view of an empty x over its kept dims would claim storage x does not have).
  Layout L;
  L.kept = strided_offsets<2>(kept_shape, {&out_strides, &x_strides});
  L.red = strided_offsets<1>(red_shape, {&x_strides});
  L.M = shape_numel(kept_shape);
  L.R = shape_numel(red_shape);
  const int64_t kin = L.kept.ndim ? std::abs(L.kept.strides[1][L.kept.ndim - 1]) : 0;
  const int64_t rin = L.red.ndim ? std::abs(L.red.strides[0][L.red.ndim - 1]) : 0;
  L.out_fastest = L.kept.ndim > 0 && L.red.ndim > 0 && kin < rin;
  if (L.out_fastest) {
    L.tx_count = pow2_at_least(L.M, kWarp);
    L.ty_count = kBlockThreads / L.tx_count;
  } else {
    L.ty_count = pow2_at_least(L.R, kBlockThreads);
    L.tx_count = kBlockThreads / L.ty_count;
  }
  const int64_t tiles = L.tiles();
  if (L.R > 0 && tiles > 0 && tiles < kTargetBlocks) {  // tiles is 0 when nothing is kept (M = 0)
    const int64_t by_blocks = (kTargetBlocks + tiles - 1) / tiles;
    const int64_t by_work = (L.R + L.ty_count * kMinPerThread - 1) / (L.ty_count * kMinPerThread);
    L.chunks = std::clamp<int64_t>(std::min(by_blocks, by_work), 1, kMaxChunks);
  }
  L.chunk = (L.R + L.chunks - 1) / L.chunks;
  if (L.chunk > 0) L.chunks = (L.R + L.chunk - 1) / L.chunk;  // no empty chunks
  return L;
}

// ---------------------------------------------------------------------------- kernels

// Block b folds chunk b % chunks of output tile b / chunks; writes the result (one chunk) or the
// chunk's accumulator to partial[c * M + m].
template <class T, class P>
__global__ void reduce_kernel(P p, const T* x, typename P::Out* out, typename P::Acc* partial, Layout L) {
  using Acc = typename P::Acc;
  const int tid = int(threadIdx.x);
  const int tx = L.out_fastest ? tid % L.tx_count : tid / L.ty_count;
  const int ty = L.out_fastest ? tid / L.tx_count : tid % L.ty_count;
  const int64_t blocks = L.tiles() * L.chunks;
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {  // uniform across the block
    const int64_t c = b % L.chunks, m = (b / L.chunks) * L.tx_count + tx;
    int64_t off[2] = {0, 0};
    Acc acc = p.init();
    if (m < L.M) {
      L.kept.offsets(m, off);
      const T* base = x + off[1];
      const int64_t r1 = min(L.R, (c + 1) * L.chunk);
      for (int64_t r = c * L.chunk + ty; r < r1; r += L.ty_count) p.step(acc, base[L.red_offset(r)], r);
    }
    acc = tile_allreduce(acc, tx, ty, L.ty_count, [&](Acc& a, const Acc& v) { p.merge(a, v); });
    if (m < L.M && ty == 0) {
      if (L.chunks == 1)
        out[off[0]] = p.finish(acc);
      else
        partial[c * L.M + m] = acc;
    }
  }
}

template <class P>
__global__ void merge_chunks_kernel(P p, const typename P::Acc* partial, typename P::Out* out, Layout L) {
  for (int64_t m = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; m < L.M; m += int64_t(gridDim.x) * blockDim.x) {
    typename P::Acc acc = partial[m];
    for (int64_t c = 1; c < L.chunks; ++c) p.merge(acc, partial[c * L.M + m]);
    int64_t off[2];
    L.kept.offsets(m, off);
    out[off[0]] = p.finish(acc);
  }
}

template <class T, class P>
void reduce_impl(const P& p, const Tensor& out, const Tensor& x, const std::vector<bool>& reduced) {
  using Acc = typename P::Acc;
  using Out = typename P::Out;
  const Layout L = make_layout(out, x, reduced);
  if (L.M == 0) return;
  DeviceGuard guard(x.device().index);
  const cudaStream_t stream = stream_for(x);
  Tensor partial;
  Acc* pp = nullptr;
  if (L.chunks > 1) {
    partial = Tensor::empty({int64_t(sizeof(Acc)) * L.chunks * L.M}, DType::UInt8, x.device());
    pp = static_cast<Acc*>(partial.raw_data());
  }
  const unsigned grid = unsigned(std::min<int64_t>(L.tiles() * L.chunks, 65536));
  reduce_kernel<T, P><<<grid, kBlockThreads, 0, stream>>>(p, x.data<T>(), out.data<Out>(), pp, L);
  MOH_CUDA_CHECK_LAUNCH("reduce_kernel");
  if (L.chunks == 1) return;
  merge_chunks_kernel<P><<<grid_for(L.M), kBlockThreads, 0, stream>>>(p, pp, out.data<Out>(), L);
  MOH_CUDA_CHECK_LAUNCH("merge_chunks_kernel");
}

// float32, float64, bfloat16, float16, and int32/int64 unless floats_only.
template <class F>
void dispatch_reduce(DType t, const char* op, bool floats_only, F&& f) {
  if (!floats_only && t == DType::Int32) return f.template operator()<int32_t>();
  if (!floats_only && t == DType::Int64) return f.template operator()<int64_t>();
  dispatch_math_float(t, op, f);
}

}  // namespace

void reduce(ReduceOp op, const Tensor& out, const Tensor& x, const std::vector<bool>& reduced) {
  const char* name = op_name(op);
  switch (op) {
    case ReduceOp::Sum:
      return dispatch_reduce(x.dtype(), name, false,
                             [&]<class T>() { reduce_impl<T>(SumPolicy<T>{}, out, x, reduced); });
    case ReduceOp::Mean: {
      int64_t count = 1;
      for (size_t d = 0; d < reduced.size(); ++d)
        if (reduced[d]) count *= x.shape()[d];
      return dispatch_reduce(x.dtype(), name, true,
                             [&]<class T>() { reduce_impl<T>(SumPolicy<T>{count}, out, x, reduced); });
    }
    case ReduceOp::Amax:
      return dispatch_reduce(x.dtype(), name, false,
                             [&]<class T>() { reduce_impl<T>(ExtremePolicy<T, true>{}, out, x, reduced); });
    case ReduceOp::Amin:
      return dispatch_reduce(x.dtype(), name, false,
                             [&]<class T>() { reduce_impl<T>(ExtremePolicy<T, false>{}, out, x, reduced); });
  }
}

void argmax(const Tensor& out, const Tensor& x, int64_t dim) {
  std::vector<bool> reduced(x.shape().size(), false);
  reduced[size_t(dim)] = true;
  dispatch_reduce(x.dtype(), "argmax", false,
                  [&]<class T>() { reduce_impl<T>(ArgmaxPolicy<T>{}, out, x, reduced); });
}

}  // namespace moh::cuda
