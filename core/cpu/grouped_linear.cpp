// Grouped row projections on the CPU. Each group's rows are gathered into a per-thread contiguous
// buffer and multiplied by the group's weight block with one GEMM; groups run in parallel (BLAS
// single-threaded inside). Results that land in rows shared between groups (gather_linear's
// grad_x, scatter_linear's output) are first written per packed row, then added into place by a
// column-parallel pass over the rows in packed order, so no two threads touch one element and the
// sum order is fixed.
#include "core/kernels/grouped_linear.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/cpu/blas.h"
#include "core/dispatch.h"
#include "core/kernels/fill.h"

namespace moh::cpu {
namespace {

struct Groups {
  const int64_t* offsets;
  const int64_t* index;
  int64_t count;
  int64_t rows(int64_t g) const { return offsets[g + 1] - offsets[g]; }
};

Groups groups_of(const Tensor& index, const Tensor& offsets) {
  return {offsets.data<int64_t>(), index.data<int64_t>(), offsets.numel() - 1};
}

// Copies rows index[r0 .. r0 + n) of a [N, cols] matrix with row stride ld into dst [n, cols].
template <class T>
void gather_rows(T* dst, const T* src, int64_t ld, const int64_t* index, int64_t n, int64_t cols) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * cols, src + index[i] * ld, size_t(cols) * sizeof(T));
}

// dst[index[r]] += rows[r] for every packed row r, split across threads by column ranges.
template <class T>
void scatter_add_rows(T* dst, int64_t ld_dst, const T* rows, const int64_t* index, int64_t num_rows, int64_t cols) {
  const int64_t chunk = 64;
  const int64_t chunks = (cols + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (num_rows * cols > 32768)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t c0 = c * chunk, c1 = std::min(cols, c0 + chunk);
    for (int64_t r = 0; r < num_rows; ++r) {
      T* d = dst + index[r] * ld_dst;
      const T* s = rows + r * cols;
      for (int64_t j = c0; j < c1; ++j) d[j] += s[j];
    }
  }
}

template <class T>
const T* block(const Tensor& w, int64_t g) {
  return w.data<T>() + g * w.stride(0);
}

// Row stride of each [Dout, Din] weight block (any value >= Din is fine for a single row).
int64_t ld_of(const Tensor& w) {
  return w.size(1) == 1 ? std::max(w.stride(1), w.size(2)) : w.stride(1);
}

}  // namespace

void gather_linear(const Tensor& out, const Tensor& x, const Tensor& index, const Tensor& offsets, const Tensor& w,
                   const Tensor& bias) {
  const Groups gr = groups_of(index, offsets);
  const int64_t din = x.size(1), dout = w.size(1);
  dispatch_floating(x.dtype(), "gather_linear", [&]<class T>() {
    const T* px = x.data<T>();
    T* po = out.data<T>();
#pragma omp parallel
    {
      std::vector<T> xs;
#pragma omp for schedule(dynamic, 1)
      for (int64_t g = 0; g < gr.count; ++g) {
        const int64_t n = gr.rows(g), r0 = gr.offsets[g];
        if (n == 0) continue;
        xs.resize(size_t(n * din));
        gather_rows(xs.data(), px, din, gr.index + r0, n, din);
        T* og = po + r0 * dout;
        if (bias.defined()) {
          const T* b = bias.data<T>() + g * bias.stride(0);
          for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < dout; ++j) og[i * dout + j] = b[j * bias.stride(1)];
        }
        gemm({false, din}, {true, ld_of(w)}, n, dout, din, T(1), xs.data(), block<T>(w, g),
             bias.defined() ? T(1) : T(0), og, dout);
      }
    }
  });
}

void gather_linear_backward(const Tensor& grad_x, const Tensor& grad_w, const Tensor& grad_bias,
                            const Tensor& grad_out, const Tensor& x, const Tensor& index, const Tensor& offsets,
                            const Tensor& w) {
  const Groups gr = groups_of(index, offsets);
  const int64_t din = x.size(1), dout = w.size(1), total = index.numel();
  dispatch_floating(x.dtype(), "gather_linear_backward", [&]<class T>() {
    const T* px = x.data<T>();
    const T* go = grad_out.data<T>();
    std::vector<T> dx_rows(size_t(total * din));
#pragma omp parallel
    {
      std::vector<T> xs;
#pragma omp for schedule(dynamic, 1)
      for (int64_t g = 0; g < gr.count; ++g) {
        const int64_t n = gr.rows(g), r0 = gr.offsets[g];
        T* gw = grad_w.data<T>() + g * dout * din;
        if (n == 0) {
          std::fill(gw, gw + dout * din, T(0));
          if (grad_bias.defined()) std::fill(grad_bias.data<T>() + g * dout, grad_bias.data<T>() + (g + 1) * dout, T(0));
          continue;
        }
        xs.resize(size_t(n * din));
        gather_rows(xs.data(), px, din, gr.index + r0, n, din);
        const T* gog = go + r0 * dout;
        // grad_w[g] = grad_out_g^T @ x_g ; dx rows = grad_out_g @ w_g
        gemm({true, dout}, {false, din}, dout, din, n, T(1), gog, xs.data(), T(0), gw, din);
        gemm({false, dout}, {false, ld_of(w)}, n, din, dout, T(1), gog, block<T>(w, g), T(0),
             dx_rows.data() + r0 * din, din);
        if (grad_bias.defined()) {
          T* gb = grad_bias.data<T>() + g * dout;
          std::fill(gb, gb + dout, T(0));
          for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < dout; ++j) gb[j] += gog[i * dout + j];
        }
      }
    }
    fill(grad_x, 0.0);
    scatter_add_rows(grad_x.data<T>(), din, dx_rows.data(), gr.index, total, din);
  });
}

void scatter_linear(const Tensor& out, const Tensor& src, const Tensor& index, const Tensor& offsets,
                    const Tensor& w) {
  const Groups gr = groups_of(index, offsets);
  const int64_t din = src.size(1), dout = w.size(1), total = index.numel();
  dispatch_floating(src.dtype(), "scatter_linear", [&]<class T>() {
    std::vector<T> rows(size_t(total * dout));
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t g = 0; g < gr.count; ++g) {
      const int64_t n = gr.rows(g), r0 = gr.offsets[g];
      if (n == 0) continue;
      gemm({false, din}, {true, ld_of(w)}, n, dout, din, T(1), src.data<T>() + r0 * din,
           block<T>(w, g), T(0), rows.data() + r0 * dout, dout);
    }
    fill(out, 0.0);
    scatter_add_rows(out.data<T>(), dout, rows.data(), gr.index, total, dout);
  });
}

void scatter_linear_backward(const Tensor& grad_src, const Tensor& grad_w, const Tensor& grad_out,
                             const Tensor& src, const Tensor& index, const Tensor& offsets, const Tensor& w) {
  const Groups gr = groups_of(index, offsets);
  const int64_t din = src.size(1), dout = w.size(1);
  dispatch_floating(src.dtype(), "scatter_linear_backward", [&]<class T>() {
    const T* go = grad_out.data<T>();
#pragma omp parallel
    {
      std::vector<T> gos;
#pragma omp for schedule(dynamic, 1)
      for (int64_t g = 0; g < gr.count; ++g) {
        const int64_t n = gr.rows(g), r0 = gr.offsets[g];
        T* gw = grad_w.data<T>() + g * dout * din;
        if (n == 0) {
          std::fill(gw, gw + dout * din, T(0));
          continue;
        }
        gos.resize(size_t(n * dout));
        gather_rows(gos.data(), go, dout, gr.index + r0, n, dout);
        const T* sg = src.data<T>() + r0 * din;
        // grad_src_g = grad_out_g @ w_g ; grad_w[g] = grad_out_g^T @ src_g
        gemm({false, dout}, {false, ld_of(w)}, n, din, dout, T(1), gos.data(), block<T>(w, g), T(0),
             grad_src.data<T>() + r0 * din, din);
        gemm({true, dout}, {false, din}, dout, din, n, T(1), gos.data(), sg, T(0), gw, din);
      }
    }
  });
}

}  // namespace moh::cpu
