// CPU softmax kernels. A tensor is processed as independent lines along `dim`, and every line
// kernel works on contiguous memory: lines along the last dim are used in place (the fast path);
// lines along another dim (stride `inner`) are gathered in blocks of up to kBlock neighbours into a
// per-thread scratch buffer, processed there and scattered back, so memory is always read in
// contiguous runs. Lines run in parallel over the OpenMP pool; each line reduces in double
// (lane_reduce.h), and float32 exps use the vectorised softmax_exp (core/math/softmax_math.h).
#include "core/kernels/softmax.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <tuple>
#include <vector>

#include "core/cpu/lane_reduce.h"
#include "core/cpu/strided_loop.h"
#include "core/dispatch.h"
#include "core/math/softmax_math.h"

namespace moh::cpu {
namespace {

constexpr int64_t kBlock = 64;               // strided lines gathered together
constexpr int64_t kScratchElems = 1 << 16;   // per input, per thread (256 KiB of float)

// Calls line(in[0] + off, ..., in[N-1] + off, out + off, n) for every line of n elements along
// `dim` of contiguous tensors of `shape`, each line contiguous. `out` may alias in[0] inside
// `line` (the strided path relies on it: the result overwrites the gathered first input).
template <class T, size_t N, class Line>
void for_each_line(const Shape& shape, int64_t dim, std::array<const T*, N> in, T* out, Line&& line) {
  const int64_t n = shape[size_t(dim)];
  int64_t inner = 1;
  for (size_t d = size_t(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t total = shape_numel(shape);
  if (total == 0) return;
  const int64_t outer = total / (n * inner);
  auto call = [&](std::array<const T*, N> ptrs, T* dst) {
    std::apply([&](auto... p) { line(p..., dst, n); }, ptrs);
  };
  if (inner == 1) {
#pragma omp parallel for schedule(static) if (outer > 1 && total >= 2 * kParallelGrain)
    for (int64_t r = 0; r < outer; ++r) {
      std::array<const T*, N> ptrs;
      for (size_t q = 0; q < N; ++q) ptrs[q] = in[q] + r * n;
      call(ptrs, out + r * n);
    }
    return;
  }
  const int64_t block = std::min({kBlock, inner, std::max<int64_t>(1, kScratchElems / n)});
  const int64_t ld = n + 16;  // scratch line stride, padded off powers of two (cache set aliasing)
  const int64_t per_outer = (inner + block - 1) / block, units = outer * per_outer;
#pragma omp parallel if (units > 1 && total >= 2 * kParallelGrain)
  {
    std::vector<T> scratch(size_t(N * block * ld));
#pragma omp for schedule(static)
    for (int64_t u = 0; u < units; ++u) {
      const int64_t j0 = (u % per_outer) * block, w = std::min(block, inner - j0);
      const int64_t base = (u / per_outer) * n * inner + j0;
      for (size_t q = 0; q < N; ++q) {
        T* s = scratch.data() + q * size_t(block * ld);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t k = 0; k < w; ++k) s[k * ld + i] = in[q][base + i * inner + k];
      }
      for (int64_t k = 0; k < w; ++k) {
        std::array<const T*, N> ptrs;
        for (size_t q = 0; q < N; ++q) ptrs[q] = scratch.data() + q * size_t(block * ld) + k * ld;
        call(ptrs, scratch.data() + k * ld);
      }
      for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < w; ++k) out[base + i * inner + k] = scratch[size_t(k * ld + i)];
    }
  }
}

template <class T>
void softmax_line(const T* x, T* y, int64_t n) {
  const T m = lane_max(x, n);
  const double sum = lane_sum(n, [&](int64_t i) {
    const T e = softmax_exp(T(x[i] - m));
    y[i] = e;
    return double(e);
  });
  const T inv = T(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

template <class T>
void log_softmax_line(const T* x, T* y, int64_t n) {
  const T m = lane_max(x, n);
  const double log_sum = std::log(lane_sum(n, [&](int64_t i) { return double(softmax_exp(T(x[i] - m))); }));
  // Subtracting m first keeps x - m exact near the maximum.
  for (int64_t i = 0; i < n; ++i) y[i] = T((double(x[i]) - double(m)) - log_sum);
}

template <class T>
void softmax_backward_line(const T* g, const T* y, T* gi, int64_t n) {
  const double dot = lane_sum(n, [&](int64_t i) { return double(g[i]) * double(y[i]); });
  for (int64_t i = 0; i < n; ++i) gi[i] = softmax_grad(g[i], y[i], dot);
}

template <class T>
void log_softmax_backward_line(const T* g, const T* y, T* gi, int64_t n) {
  const double gsum = lane_sum(n, [&](int64_t i) { return double(g[i]); });
  for (int64_t i = 0; i < n; ++i) gi[i] = log_softmax_grad(g[i], softmax_exp(y[i]), gsum);
}

}  // namespace

void softmax(const Tensor& x, const Tensor& out, int64_t dim, bool log) {
  dispatch_floating(x.dtype(), log ? "log_softmax" : "softmax", [&]<class T>() {
    for_each_line<T, 1>(x.shape(), dim, {x.data<T>()}, out.data<T>(), [&](const T* xl, T* yl, int64_t n) {
      if (log) log_softmax_line(xl, yl, n);
      else softmax_line(xl, yl, n);
    });
  });
}

void softmax_backward(const Tensor& grad_out, const Tensor& out, const Tensor& grad_in, int64_t dim, bool log) {
  dispatch_floating(out.dtype(), log ? "log_softmax_backward" : "softmax_backward", [&]<class T>() {
    for_each_line<T, 2>(out.shape(), dim, {grad_out.data<T>(), out.data<T>()}, grad_in.data<T>(),
                        [&](const T* gl, const T* yl, T* gil, int64_t n) {
                          if (log) log_softmax_backward_line(gl, yl, gil, n);
                          else softmax_backward_line(gl, yl, gil, n);
                        });
  });
}

}  // namespace moh::cpu
