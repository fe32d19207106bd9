// CPU resampling kernels (core/kernels/resample.h). The N * C image planes run in parallel on the
// OpenMP pool, a plane on one thread, so no two threads touch one element. Every sum adds its
// terms in ascending (row, column) order in double and is rounded once (the CUDA kernels' order):
// the forward pooling and the upsampling backward walk their input row by row into a row of
// double accumulators; the pooling backward gathers, per input element, the windows covering it.
#include "core/kernels/resample.h"

#include <algorithm>
#include <vector>

#include "core/cpu/strided_loop.h"
#include "core/dispatch.h"
#include "core/math/pool_window.h"

namespace moh::cpu {
namespace {

// Calls f(plane) for every one of `planes` image planes, in parallel when the work is large.
template <class F>
void for_each_plane(int64_t planes, int64_t work, F&& f) {
#pragma omp parallel for schedule(static) if (planes > 1 && work >= 2 * kParallelGrain)
  for (int64_t p = 0; p < planes; ++p) f(p);
}

}  // namespace

void upsample_nearest2d(const Tensor& x, int64_t scale, const Tensor& out) {
  const int64_t h = x.size(2), w = x.size(3), ho = out.size(2), wo = out.size(3);
  dispatch_floating(x.dtype(), "upsample_nearest2d", [&]<class T>() {
    const T* px = x.data<T>();
    T* py = out.data<T>();
    for_each_plane(x.size(0) * x.size(1), out.numel(), [&](int64_t p) {
      const T* xp = px + p * h * w;
      T* yp = py + p * ho * wo;
      for (int64_t i = 0; i < h; ++i) {  // widen input row i once, then copy it to the other scale - 1 rows
        const T* xr = xp + i * w;
        T* first = yp + i * scale * wo;
        for (int64_t j = 0; j < w; ++j)
          for (int64_t b = 0; b < scale; ++b) first[j * scale + b] = xr[j];
        for (int64_t a = 1; a < scale; ++a) std::copy(first, first + wo, first + a * wo);
      }
    });
  });
}

void upsample_nearest2d_backward(const Tensor& grad_out, int64_t scale, const Tensor& grad_x) {
  const int64_t ho = grad_out.size(2), wo = grad_out.size(3), h = grad_x.size(2), w = grad_x.size(3);
  dispatch_floating(grad_out.dtype(), "upsample_nearest2d_backward", [&]<class T>() {
    const T* pg = grad_out.data<T>();
    T* pgx = grad_x.data<T>();
    for_each_plane(grad_x.size(0) * grad_x.size(1), grad_out.numel(), [&](int64_t p) {
      const T* gp = pg + p * ho * wo;
      T* gxp = pgx + p * h * w;
      std::vector<double> sums(static_cast<size_t>(w));
      for (int64_t i = 0; i < h; ++i) {  // row by row through grad_out; each sum still runs a, then b
        std::fill(sums.begin(), sums.end(), 0.0);
        for (int64_t a = i * scale; a < (i + 1) * scale; ++a) {
          const T* gr = gp + a * wo;
          for (int64_t j = 0; j < w; ++j)
            for (int64_t b = 0; b < scale; ++b) sums[size_t(j)] += double(gr[j * scale + b]);
        }
        for (int64_t j = 0; j < w; ++j) gxp[i * w + j] = T(sums[size_t(j)]);
      }
    });
  });
}

void avg_pool2d(const Tensor& x, int64_t kernel, int64_t stride, const Tensor& out) {
  const int64_t h = x.size(2), w = x.size(3), ho = out.size(2), wo = out.size(3);
  const double area = double(kernel * kernel);
  dispatch_floating(x.dtype(), "avg_pool2d", [&]<class T>() {
    const T* px = x.data<T>();
    T* py = out.data<T>();
    for_each_plane(x.size(0) * x.size(1), out.numel() * kernel * kernel, [&](int64_t p) {
      const T* xp = px + p * h * w;
      T* yp = py + p * ho * wo;
      std::vector<double> sums(static_cast<size_t>(wo));
      for (int64_t i = 0; i < ho; ++i) {  // window rows a in turn, each adding its columns b in turn
        std::fill(sums.begin(), sums.end(), 0.0);
        for (int64_t a = i * stride; a < i * stride + kernel; ++a) {
          const T* xr = xp + a * w;
          for (int64_t j = 0; j < wo; ++j)
            for (int64_t b = j * stride; b < j * stride + kernel; ++b) sums[size_t(j)] += double(xr[b]);
        }
        for (int64_t j = 0; j < wo; ++j) yp[i * wo + j] = T(sums[size_t(j)] / area);
      }
    });
  });
}

void avg_pool2d_backward(const Tensor& grad_out, int64_t kernel, int64_t stride, const Tensor& grad_x) {
  const int64_t ho = grad_out.size(2), wo = grad_out.size(3), h = grad_x.size(2), w = grad_x.size(3);
  const double area = double(kernel * kernel);
  dispatch_floating(grad_out.dtype(), "avg_pool2d_backward", [&]<class T>() {
    const T* pg = grad_out.data<T>();
    T* pgx = grad_x.data<T>();
    const int64_t per_axis = (kernel + stride - 1) / stride;  // windows covering an element, at most
    std::vector<WindowRange> col_windows(static_cast<size_t>(w));
    for (int64_t j = 0; j < w; ++j) col_windows[size_t(j)] = covering_windows(j, kernel, stride, wo);
    for_each_plane(grad_x.size(0) * grad_x.size(1), grad_x.numel() * per_axis * per_axis, [&](int64_t p) {
      const T* gp = pg + p * ho * wo;
      T* gxp = pgx + p * h * w;
      for (int64_t i = 0; i < h; ++i) {
        const WindowRange rows = covering_windows(i, kernel, stride, ho);
        for (int64_t j = 0; j < w; ++j) {
          const WindowRange cols = col_windows[size_t(j)];
          double s = 0;
          for (int64_t a = rows.begin; a < rows.end; ++a)
            for (int64_t b = cols.begin; b < cols.end; ++b) s += double(gp[a * wo + b]);
          gxp[i * w + j] = T(s / area);
        }
      }
    });
  });
}

}  // namespace moh::cpu
