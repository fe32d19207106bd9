// map_elements: the one elementwise loop behind the CPU unary/binary/compare/where kernels.
// out[i] = f(in0[i], in1[i], ...) over the strided-loop engine. Inputs already have out's shape
// (broadcast views with stride 0 are fine); out may be strided and may alias an input exactly
// (in-place ops), never partially. Contiguous runs get a tight loop the compiler can vectorise;
// binary runs where one side is a broadcast scalar get their own loop too.
#pragma once

#include <array>
#include <tuple>
#include <utility>

#include "core/cpu/strided_loop.h"
#include "core/macros.h"
#include "core/tensor.h"

namespace moh::cpu {
namespace detail {

template <class T>
MOH_FORCE_INLINE const T& at(const char* p, int64_t stride, int64_t i) {
  return *reinterpret_cast<const T*>(p + i * stride);
}

template <class Out, class... In, class F, size_t... K>
MOH_FORCE_INLINE void run_elements(const F& f, const std::array<char*, sizeof...(In) + 1>& p,
                                   const std::array<int64_t, sizeof...(In) + 1>& s, int64_t n,
                                   std::index_sequence<K...>) {
  Out* out = reinterpret_cast<Out*>(p[0]);
  if (s[0] == int64_t(sizeof(Out))) {
    if (((s[K + 1] == int64_t(sizeof(In))) && ...)) {
      std::tuple<const In*...> in{reinterpret_cast<const In*>(p[K + 1])...};
      for (int64_t i = 0; i < n; ++i) out[i] = f(std::get<K>(in)[i]...);
      return;
    }
    if constexpr (sizeof...(In) == 2) {
      using A = std::tuple_element_t<0, std::tuple<In...>>;
      using B = std::tuple_element_t<1, std::tuple<In...>>;
      if (s[1] == int64_t(sizeof(A)) && s[2] == 0) {
        const A* a = reinterpret_cast<const A*>(p[1]);
        const B b = *reinterpret_cast<const B*>(p[2]);
        for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b);
        return;
      }
      if (s[1] == 0 && s[2] == int64_t(sizeof(B))) {
        const A a = *reinterpret_cast<const A*>(p[1]);
        const B* b = reinterpret_cast<const B*>(p[2]);
        for (int64_t i = 0; i < n; ++i) out[i] = f(a, b[i]);
        return;
      }
    }
  }
  for (int64_t i = 0; i < n; ++i)
    *reinterpret_cast<Out*>(p[0] + i * s[0]) = f(at<In>(p[K + 1], s[K + 1], i)...);
}

template <class Out, class... In, class F, size_t... K>
void map_elements_impl(const Tensor& out, const std::array<const Tensor*, sizeof...(In)>& in, const F& f,
                       std::index_sequence<K...> seq) {
  constexpr int N = int(sizeof...(In)) + 1;
  StridedIter<N> it(out.shape(), {out.strides(), in[K]->strides()...});
  std::array<char*, N> base{static_cast<char*>(out.raw_data()), static_cast<char*>(in[K]->raw_data())...};
  std::array<int64_t, N> sizes{int64_t(sizeof(Out)), int64_t(sizeof(In))...};
  // flatten: f is inlined into the run loops even when large (GELU's erf), so they vectorise.
  auto run = [&f, seq](std::array<char*, N> p, std::array<int64_t, N> s, int64_t n) __attribute__((flatten)) {
    run_elements<Out, In...>(f, p, s, n, seq);
  };
  for_each_run<N>(it, base, sizes, run);
}

}  // namespace detail

// Out and In... are the element types of out and of each input (checked by the caller's dispatch).
template <class Out, class... In, class F>
void map_elements(const Tensor& out, const std::array<const Tensor*, sizeof...(In)>& in, const F& f) {
  detail::map_elements_impl<Out, In...>(out, in, f, std::index_sequence_for<In...>{});
}

}  // namespace moh::cpu
