// The launchers behind every CUDA elementwise kernel (binary, unary, compare, where, copy, fill,
// random fills, dropout), the twin of core/cpu/elementwise_loop.h.
//   for_each_index(on, n, name, f)   calls the device functor f(i) for i in [0, n) in a grid-stride
//                                    loop on the compute stream of on's device (nothing for n == 0).
//   map_elements<Out, In...>(out, {&in...}, f)   out[i] = f(in0[i], in1[i], ...) over out's shape.
// map_elements takes inputs already expanded to out's shape (stride-0 broadcast views are fine);
// out may be strided and may alias an input exactly (in-place ops), never partially. When out is
// contiguous and every input is contiguous or a broadcast scalar, elements are addressed by the
// plain index; otherwise through StridedOffsets (core/cuda/launch.cuh). f is a device functor or an
// extended __device__ lambda, copied to the device by value.
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include "core/cuda/dispatch.cuh"
#include "core/cuda/launch.cuh"

namespace moh::cuda {
namespace detail {

template <class F>
__global__ void for_each_index_kernel(int64_t n, F f) {
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) f(i);
}

template <int N>
struct InputPointers {
  const void* p[N > 0 ? N : 1];
};

// Contiguous operands; bit k of `scalar` marks input k as a broadcast scalar (always element 0).
template <class Out, class F, class... In>
struct FlatMap {
  Out* out;
  InputPointers<int(sizeof...(In))> in;
  uint32_t scalar;
  F f;

  __device__ __forceinline__ void operator()(int64_t i) const { apply(i, std::index_sequence_for<In...>{}); }

  template <size_t... K>
  __device__ __forceinline__ void apply(int64_t i, std::index_sequence<K...>) const {
    out[i] = f(static_cast<const In*>(in.p[K])[(scalar >> K) & 1u ? 0 : i]...);
  }
};

template <class Out, class F, class... In>
struct StridedMap {
  static constexpr int N = int(sizeof...(In)) + 1;
  Out* out;
  InputPointers<int(sizeof...(In))> in;
  StridedOffsets<N> at;
  F f;

  __device__ __forceinline__ void operator()(int64_t i) const {
    int64_t off[N];
    at.offsets(i, off);
    apply(off, std::index_sequence_for<In...>{});
  }

  template <size_t... K>
  __device__ __forceinline__ void apply(const int64_t (&off)[N], std::index_sequence<K...>) const {
    out[off[0]] = f(static_cast<const In*>(in.p[K])[off[K + 1]]...);
  }
};

// Every dim of size > 1 has stride 0: the view repeats one element.
inline bool is_broadcast_scalar(const Tensor& t) {
  for (size_t d = 0; d < t.shape().size(); ++d)
    if (t.shape()[d] > 1 && t.strides()[d] != 0) return false;
  return true;
}

}  // namespace detail

template <class F>
void for_each_index(const Tensor& on, int64_t n, const char* kernel, const F& f) {
  if (n == 0) return;
  DeviceGuard guard(on.device().index);
  detail::for_each_index_kernel<<<grid_for(n), kBlockThreads, 0, stream_for(on)>>>(n, f);
  MOH_CUDA_CHECK_LAUNCH(kernel);
}

// Out and In... are the element types of out and of each input (checked by the caller's dispatch).
template <class Out, class... In, class F>
void map_elements(const Tensor& out, const std::array<const Tensor*, sizeof...(In)>& in, const F& f) {
  constexpr int M = int(sizeof...(In));
  static_assert(M < 32, "map_elements: the broadcast-scalar mask holds 31 inputs");
  const int64_t n = out.numel();
  if (n == 0) return;
  detail::InputPointers<M> ptrs{};
  bool flat = out.is_contiguous();
  uint32_t scalar = 0;
  for (int k = 0; k < M; ++k) {
    ptrs.p[k] = in[size_t(k)]->raw_data();
    if (detail::is_broadcast_scalar(*in[size_t(k)])) scalar |= 1u << k;
    else flat = flat && in[size_t(k)]->is_contiguous();
  }
  Out* o = static_cast<Out*>(out.raw_data());
  if (flat) {
    for_each_index(out, n, "map_elements (contiguous)", detail::FlatMap<Out, F, In...>{o, ptrs, scalar, f});
    return;
  }
  std::array<const Tensor*, M + 1> all{&out};
  for (int k = 0; k < M; ++k) all[size_t(k) + 1] = in[size_t(k)];
  const StridedOffsets<M + 1> at = strided_offsets<M + 1>(out.shape(), all);
  for_each_index(out, n, "map_elements (strided)", detail::StridedMap<Out, F, In...>{o, ptrs, at, f});
}

}  // namespace moh::cuda
