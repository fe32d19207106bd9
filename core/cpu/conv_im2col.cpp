// CPU conv2d as im2col + GEMM (see core/cpu/conv_im2col.h). Per chunk of samples and per group:
//   forward        y_g [OG, s*P]  = W_g [OG, K] @ cols [K, s*P]           (+ bias)
//   weight grad    dW_g [OG, K]  += dy_g [OG, s*P] @ cols^T                 (chunks in order)
//   input grad     dcols [K, s*P] = W_g^T @ dy_g, then col2im adds dcols into dx
// with K = C/groups * KH * KW and P = HO * WO. A pointwise (1x1, stride 1, no padding) convolution of
// one sample per chunk reads x and writes dx in place of the columns. GEMMs run in row bands on the
// OpenMP team (core/cpu/team_gemm.h); im2col, col2im and the layout copies split their planes over
// OpenMP threads, each plane written by one thread, so every sum has one fixed order.
#include "core/cpu/conv_im2col.h"

#include <algorithm>

#include "core/cpu/team_gemm.h"
#include "core/dispatch.h"

namespace moh::cpu {
namespace {

// Samples per chunk: enough that a chunk's GEMM is about kTargetColumns wide, within a budget of
// column elements. It depends on the shape only (never on the thread count), so the batch sums keep
// their order.
int64_t samples_per_chunk(const ConvGeometry& g) {
  constexpr int64_t kTargetColumns = 2048;
  constexpr int64_t kMaxColumnElements = int64_t(1) << 23;  // 32 MiB of float32 columns
  const int64_t by_width = std::max<int64_t>(1, kTargetColumns / g.out_plane());
  const int64_t by_memory = std::max<int64_t>(1, kMaxColumnElements / (g.patch() * g.out_plane()));
  return std::max<int64_t>(1, std::min({by_width, by_memory, g.n}));
}

// The output positions [lo, hi) along one axis whose input index o * stride - pad + k * dilation
// lies inside [0, size).
struct ValidRange {
  int64_t lo, hi;
};
ValidRange valid_outputs(int64_t size, int64_t out, int64_t stride, int64_t pad, int64_t offset) {
  // input = o * stride + (offset - pad), offset = k * dilation
  const int64_t shift = offset - pad;
  int64_t lo = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
  int64_t hi = size - shift <= 0 ? 0 : (size - shift - 1) / stride + 1;
  lo = std::min(lo, out);
  hi = std::clamp(hi, lo, out);
  return {lo, hi};
}

// Spreads `planes` items over OpenMP threads when the work is worth it.
constexpr int64_t kParallelElements = 16384;

template <class T>
class ConvChunks {
 public:
  explicit ConvChunks(const ConvGeometry& g) : g_(g), plane_(g.out_plane()), patch_(g.patch()) {}

  // Columns of samples [n0, n0 + s) and group `group` of x: [K, s * P], row (c, ki, kj), column (s, oy, ox).
  void im2col(const T* x, int64_t n0, int64_t s, int64_t group, T* cols) const {
    const int64_t width = s * plane_;
#pragma omp parallel for collapse(2) schedule(static) if (s * g_.cg * patch_ * plane_ > kParallelElements)
    for (int64_t si = 0; si < s; ++si)
      for (int64_t c = 0; c < g_.cg; ++c) {
        const T* in = x + ((n0 + si) * g_.c + group * g_.cg + c) * g_.in_plane();
        for (int64_t ki = 0; ki < g_.kh; ++ki) {
          const ValidRange rows = valid_outputs(g_.h, g_.ho, g_.p.stride_h, g_.p.pad_h, ki * g_.p.dilation_h);
          for (int64_t kj = 0; kj < g_.kw; ++kj) {
            const ValidRange cols_x = valid_outputs(g_.w, g_.wo, g_.p.stride_w, g_.p.pad_w, kj * g_.p.dilation_w);
            const int64_t x_shift = kj * g_.p.dilation_w - g_.p.pad_w;
            T* row = cols + ((c * g_.kh + ki) * g_.kw + kj) * width + si * plane_;
            for (int64_t oy = 0; oy < g_.ho; ++oy) {
              T* dst = row + oy * g_.wo;
              if (oy < rows.lo || oy >= rows.hi) {
                std::fill(dst, dst + g_.wo, T(0));
                continue;
              }
              const T* src = in + (oy * g_.p.stride_h - g_.p.pad_h + ki * g_.p.dilation_h) * g_.w + x_shift;
              std::fill(dst, dst + cols_x.lo, T(0));
              for (int64_t ox = cols_x.lo; ox < cols_x.hi; ++ox) dst[ox] = src[ox * g_.p.stride_w];
              std::fill(dst + cols_x.hi, dst + g_.wo, T(0));
            }
          }
        }
      }
  }

  // dx planes of samples [n0, n0 + s) and group `group` = the sum of their column entries (the adjoint
  // of im2col); each plane is overwritten.
  void col2im(const T* dcols, int64_t n0, int64_t s, int64_t group, T* dx) const {
    const int64_t width = s * plane_;
#pragma omp parallel for collapse(2) schedule(static) if (s * g_.cg * patch_ * plane_ > kParallelElements)
    for (int64_t si = 0; si < s; ++si)
      for (int64_t c = 0; c < g_.cg; ++c) {
        T* out = dx + ((n0 + si) * g_.c + group * g_.cg + c) * g_.in_plane();
        std::fill(out, out + g_.in_plane(), T(0));
        for (int64_t ki = 0; ki < g_.kh; ++ki) {
          const ValidRange rows = valid_outputs(g_.h, g_.ho, g_.p.stride_h, g_.p.pad_h, ki * g_.p.dilation_h);
          for (int64_t kj = 0; kj < g_.kw; ++kj) {
            const ValidRange cols_x = valid_outputs(g_.w, g_.wo, g_.p.stride_w, g_.p.pad_w, kj * g_.p.dilation_w);
            const int64_t x_shift = kj * g_.p.dilation_w - g_.p.pad_w;
            const T* row = dcols + ((c * g_.kh + ki) * g_.kw + kj) * width + si * plane_;
            for (int64_t oy = rows.lo; oy < rows.hi; ++oy) {
              const T* src = row + oy * g_.wo;
              T* dst = out + (oy * g_.p.stride_h - g_.p.pad_h + ki * g_.p.dilation_h) * g_.w + x_shift;
              for (int64_t ox = cols_x.lo; ox < cols_x.hi; ++ox) dst[ox * g_.p.stride_w] += src[ox];
            }
          }
        }
      }
  }

  // [OG, s * P] block of the NCHW tensor t ([N, O, P]) for samples [n0, n0 + s) and `group`, copied
  // to `packed` (to_packed) or back, adding bias[o] when given (from_packed).
  void to_packed(const T* t, int64_t n0, int64_t s, int64_t group, T* packed) const {
#pragma omp parallel for collapse(2) schedule(static) if (s * g_.og * plane_ > kParallelElements)
    for (int64_t o = 0; o < g_.og; ++o)
      for (int64_t si = 0; si < s; ++si) {
        const T* src = t + ((n0 + si) * g_.o + group * g_.og + o) * plane_;
        std::copy(src, src + plane_, packed + (o * s + si) * plane_);
      }
  }
  void from_packed(const T* packed, const T* bias, int64_t n0, int64_t s, int64_t group, T* t) const {
#pragma omp parallel for collapse(2) schedule(static) if (s * g_.og * plane_ > kParallelElements)
    for (int64_t o = 0; o < g_.og; ++o)
      for (int64_t si = 0; si < s; ++si) {
        const T* src = packed + (o * s + si) * plane_;
        T* dst = t + ((n0 + si) * g_.o + group * g_.og + o) * plane_;
        const T b = bias ? bias[group * g_.og + o] : T(0);
        for (int64_t p = 0; p < plane_; ++p) dst[p] = src[p] + b;
      }
  }

 private:
  const ConvGeometry& g_;
  const int64_t plane_, patch_;
};

// Scratch of n elements of T from the allocator (uninitialised).
template <class T>
Tensor scratch(int64_t n) {
  return Tensor::empty({n}, dtype_of<T>, Device::cpu());
}

template <class T>
void forward(const ConvGeometry& g, const T* x, const T* w, const T* bias, T* y) {
  const int64_t plane = g.out_plane(), patch = g.patch(), chunk = samples_per_chunk(g);
  const ConvChunks<T> chunks(g);
  const bool direct = g.pointwise() && chunk == 1;
  Tensor cols_buffer = direct ? Tensor() : scratch<T>(patch * chunk * plane);
  Tensor out_buffer = chunk == 1 ? Tensor() : scratch<T>(g.og * chunk * plane);
  for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
    const int64_t s = std::min(chunk, g.n - n0), width = s * plane;
    for (int64_t group = 0; group < g.groups; ++group) {
      const T* wg = w + group * g.og * patch;
      const T* cols = direct ? x + (n0 * g.c + group * g.cg) * g.in_plane() : cols_buffer.data<T>();
      if (!direct) chunks.im2col(x, n0, s, group, cols_buffer.data<T>());
      if (s == 1) {  // GEMM straight into the sample's output planes, onto the bias
        T* yg = y + (n0 * g.o + group * g.og) * plane;
        if (bias)
          for (int64_t o = 0; o < g.og; ++o) std::fill(yg + o * plane, yg + (o + 1) * plane, bias[group * g.og + o]);
        team_gemm({false, patch}, {false, plane}, g.og, plane, patch, T(1), wg, cols, bias ? T(1) : T(0), yg,
                  plane);
      } else {
        T* packed = out_buffer.data<T>();
        team_gemm({false, patch}, {false, width}, g.og, width, patch, T(1), wg, cols, T(0), packed, width);
        chunks.from_packed(packed, bias, n0, s, group, y);
      }
    }
  }
}

template <class T>
void bias_grad(const ConvGeometry& g, const T* dy, T* db) {
  const int64_t plane = g.out_plane();
#pragma omp parallel for schedule(static) if (g.n * g.o * plane > kParallelElements)
  for (int64_t o = 0; o < g.o; ++o) {
    double total = 0;  // float32 planes summed in double: one fixed order, little rounding
    for (int64_t n = 0; n < g.n; ++n) {
      const T* src = dy + (n * g.o + o) * plane;
      for (int64_t p = 0; p < plane; ++p) total += double(src[p]);
    }
    db[o] = T(total);
  }
}

template <class T>
void backward(const ConvGeometry& g, const T* dy, const T* x, const T* w, T* dx, T* dw, T* db) {
  if (db) bias_grad(g, dy, db);
  if (g.n == 0) {
    if (dw) std::fill(dw, dw + g.o * g.patch(), T(0));
    return;
  }
  if (!dx && !dw) return;
  const int64_t plane = g.out_plane(), patch = g.patch(), chunk = samples_per_chunk(g);
  const ConvChunks<T> chunks(g);
  const bool direct = g.pointwise() && chunk == 1;
  Tensor cols_buffer = direct ? Tensor() : scratch<T>(patch * chunk * plane);  // columns, then their gradient
  Tensor dy_buffer = chunk == 1 ? Tensor() : scratch<T>(g.og * chunk * plane);
  for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
    const int64_t s = std::min(chunk, g.n - n0), width = s * plane;
    for (int64_t group = 0; group < g.groups; ++group) {
      const T* wg = w + group * g.og * patch;
      const T* dyg = dy + (n0 * g.o + group * g.og) * plane;  // [OG, P] of one sample, or packed below
      if (s > 1) {
        chunks.to_packed(dy, n0, s, group, dy_buffer.data<T>());
        dyg = dy_buffer.data<T>();
      }
      const int64_t in_offset = (n0 * g.c + group * g.cg) * g.in_plane();
      if (dw) {
        const T* cols = direct ? x + in_offset : cols_buffer.data<T>();
        if (!direct) chunks.im2col(x, n0, s, group, cols_buffer.data<T>());
        team_gemm({false, width}, {true, width}, g.og, patch, width, T(1), dyg, cols, n0 == 0 ? T(0) : T(1),
                  dw + group * g.og * patch, patch);
      }
      if (dx) {
        if (direct) {
          team_gemm({true, patch}, {false, width}, patch, width, g.og, T(1), wg, dyg, T(0), dx + in_offset,
                    width);
        } else {
          T* dcols = cols_buffer.data<T>();
          team_gemm({true, patch}, {false, width}, patch, width, g.og, T(1), wg, dyg, T(0), dcols, width);
          chunks.col2im(dcols, n0, s, group, dx);
        }
      }
    }
  }
}

template <class T>
T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

void im2col_conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& params,
                           const Tensor& out) {
  const ConvGeometry g = conv_geometry(x.shape(), weight.shape(), params);
  dispatch_floating(x.dtype(), "conv2d", [&]<class T>() {
    forward<T>(g, x.data<T>(), weight.data<T>(), data_or_null<T>(bias), out.data<T>());
  });
}

void im2col_conv2d_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                            const Conv2dParams& params, const Tensor& grad_input, const Tensor& grad_weight,
                            const Tensor& grad_bias) {
  const ConvGeometry g = conv_geometry(x.shape(), weight.shape(), params);
  dispatch_floating(x.dtype(), "conv2d_backward", [&]<class T>() {
    backward<T>(g, grad_out.data<T>(), x.data<T>(), weight.data<T>(), data_or_null<T>(grad_input),
                data_or_null<T>(grad_weight), data_or_null<T>(grad_bias));
  });
}

}  // namespace moh::cpu
