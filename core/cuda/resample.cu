// CUDA resampling kernels (core/kernels/resample.h, mirroring core/cpu/resample.cpp): one thread per
// element of the tensor being written (the output forward, grad_x backward), so every element is
// one thread's sum in a fixed (row, column) order: deterministic, no atomics. Tensors are
// contiguous NCHW; `plane` is n * C + c.
#include "core/kernels/resample.h"

#include <type_traits>

#include "core/cuda/elementwise_launch.cuh"
#include "core/math/pool_window.h"

namespace moh::cuda {
namespace {

// Sums in float for the 16-bit floats, in double for float32/float64 (as the CPU does).
template <class T>
using sum_t = std::conditional_t<is_half_v<T>, float, double>;

// Sizes of one resampling: the input plane h x w, the output plane ho x wo.
struct Planes {
  int64_t h, w, ho, wo;
};

template <class T>
struct UpsampleForward {
  T* out;
  const T* x;
  Planes s;
  int64_t scale;

  __device__ __forceinline__ void operator()(int64_t i) const {
    const int64_t j = i % s.wo, row = i / s.wo, oi = row % s.ho, plane = row / s.ho;
    out[i] = x[(plane * s.h + oi / scale) * s.w + j / scale];
  }
};

template <class T>
struct UpsampleBackward {
  T* grad_x;
  const T* grad_out;
  Planes s;
  int64_t scale;

  __device__ __forceinline__ void operator()(int64_t i) const {
    const int64_t j = i % s.w, row = i / s.w, ii = row % s.h, plane = row / s.h;
    const T* g = grad_out + plane * s.ho * s.wo;
    sum_t<T> sum = 0;
    for (int64_t a = ii * scale; a < (ii + 1) * scale; ++a)
      for (int64_t b = j * scale; b < (j + 1) * scale; ++b) sum += sum_t<T>(g[a * s.wo + b]);
    grad_x[i] = T(sum);
  }
};

template <class T>
struct AvgPoolForward {
  T* out;
  const T* x;
  Planes s;
  int64_t kernel, stride;

  __device__ __forceinline__ void operator()(int64_t i) const {
    const int64_t j = i % s.wo, row = i / s.wo, oi = row % s.ho, plane = row / s.ho;
    const T* xp = x + plane * s.h * s.w;
    sum_t<T> sum = 0;
    for (int64_t a = oi * stride; a < oi * stride + kernel; ++a)
      for (int64_t b = j * stride; b < j * stride + kernel; ++b) sum += sum_t<T>(xp[a * s.w + b]);
    out[i] = T(sum / sum_t<T>(kernel * kernel));
  }
};

template <class T>
struct AvgPoolBackward {
  T* grad_x;
  const T* grad_out;
  Planes s;
  int64_t kernel, stride;

  __device__ __forceinline__ void operator()(int64_t i) const {
    const int64_t j = i % s.w, row = i / s.w, ii = row % s.h, plane = row / s.h;
    const T* g = grad_out + plane * s.ho * s.wo;
    const WindowRange rows = covering_windows(ii, kernel, stride, s.ho);
    const WindowRange cols = covering_windows(j, kernel, stride, s.wo);
    sum_t<T> sum = 0;
    for (int64_t a = rows.begin; a < rows.end; ++a)
      for (int64_t b = cols.begin; b < cols.end; ++b) sum += sum_t<T>(g[a * s.wo + b]);
    grad_x[i] = T(sum / sum_t<T>(kernel * kernel));
  }
};

// The plane sizes of a resampling from `in` to `out` (both [N, C, H, W]).
Planes planes(const Tensor& in, const Tensor& out) { return {in.size(2), in.size(3), out.size(2), out.size(3)}; }

}  // namespace

void upsample_nearest2d(const Tensor& x, int64_t scale, const Tensor& out) {
  dispatch_math_float(x.dtype(), "upsample_nearest2d", [&]<class T>() {
    const UpsampleForward<T> f{out.data<T>(), x.data<T>(), planes(x, out), scale};
    for_each_index(out, out.numel(), "upsample_nearest2d forward", f);
  });
}

void upsample_nearest2d_backward(const Tensor& grad_out, int64_t scale, const Tensor& grad_x) {
  dispatch_math_float(grad_out.dtype(), "upsample_nearest2d_backward", [&]<class T>() {
    const UpsampleBackward<T> f{grad_x.data<T>(), grad_out.data<T>(), planes(grad_x, grad_out), scale};
    for_each_index(grad_x, grad_x.numel(), "upsample_nearest2d backward", f);
  });
}

void avg_pool2d(const Tensor& x, int64_t kernel, int64_t stride, const Tensor& out) {
  dispatch_math_float(x.dtype(), "avg_pool2d", [&]<class T>() {
    const AvgPoolForward<T> f{out.data<T>(), x.data<T>(), planes(x, out), kernel, stride};
    for_each_index(out, out.numel(), "avg_pool2d forward", f);
  });
}

void avg_pool2d_backward(const Tensor& grad_out, int64_t kernel, int64_t stride, const Tensor& grad_x) {
  dispatch_math_float(grad_out.dtype(), "avg_pool2d_backward", [&]<class T>() {
    const AvgPoolBackward<T> f{grad_x.data<T>(), grad_out.data<T>(), planes(grad_x, grad_out), kernel, stride};
    for_each_index(grad_x, grad_x.numel(), "avg_pool2d backward", f);
  });
}

}  // namespace moh::cuda
