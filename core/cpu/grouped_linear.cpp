// Grouped row projections on the CPU, each group one indexed_gemm (core/cpu/indexed_gemm.h) that reads
// its gathered rows in place and adds into scattered rows directly: no gathered copies, no per-row
// temporaries. Work that writes a group's own rows or weight block runs groups in parallel. Work
// that adds into rows shared between groups (gather_linear's grad_x, scatter_linear's output) runs
// column slices in parallel instead, each slice taking the groups in ascending order, so no two
// threads touch one element and every sum has the same order for any thread count; inside a slice the
// shared rows are taken a cache-sized block at a time when the groups' rows ascend (their order from
// pack_head_rows), each group's weight block packed once for all blocks.
#include "core/kernels/grouped_linear.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/cpu/indexed_gemm.h"
#include "core/dispatch.h"
#include "core/kernels/fill.h"

namespace moh::cpu {
namespace {

struct Groups {
  const int64_t* offsets;
  const int64_t* index;
  int64_t count;
  int64_t begin(int64_t g) const { return offsets[g]; }
  int64_t rows(int64_t g) const { return offsets[g + 1] - offsets[g]; }
  const int64_t* index_of(int64_t g) const { return index + offsets[g]; }
};

Groups groups_of(const Tensor& index, const Tensor& offsets) {
  return {offsets.data<int64_t>(), index.data<int64_t>(), offsets.numel() - 1};
}

// w [G, Dout, Din] (unit last stride): group g's block, and its transpose, as [Dout, Din] / [Din, Dout] views.
template <class T>
MatrixView<const T> block(const Tensor& w, int64_t g) {
  return {w.data<T>() + g * w.stride(0), w.stride(1), 1};
}
template <class T>
MatrixView<const T> block_transposed(const Tensor& w, int64_t g) {
  return {w.data<T>() + g * w.stride(0), 1, w.stride(1)};
}

constexpr int64_t kRowBlockBytes = 192 * 1024;  // of one column slice of c, rows that stay in L2 together

// Runs fn(c0, c1) over column slices [c0, c1) of `cols` in parallel: one or two slices per thread,
// at most 256 columns (the GEMM's panel width) each.
template <class Fn>
void for_column_slices(int64_t cols, int64_t rows_times_cols, Fn&& fn) {
  const int64_t threads = omp_get_max_threads();
  const int64_t width = std::clamp<int64_t>((cols + 2 * threads - 1) / (2 * threads), 16, 256);
  const int64_t slices = (cols + width - 1) / width;
#pragma omp parallel for schedule(dynamic, 1) if (rows_times_cols > 32768)
  for (int64_t s = 0; s < slices; ++s) fn(s * width, std::min(cols, (s + 1) * width));
}

// c[index_g] += a_g @ b_of(g) for every group g, where a_g is the group's rows of a ([rows(g), k], packed
// group by group) and b_of(g) a k x cols view. A column slice of c at a time in parallel; inside a slice
// each group's B block is packed once, and when every group's rows ascend (pack_head_rows' order) the
// rows of c are taken in blocks that stay in cache while each group adds into them. A row receives the
// groups in ascending order either way.
template <class T, class BlockOf>
void add_into_scattered_rows(T* c, int64_t c_rows, int64_t cols, const T* a, int64_t k, const Groups& gr,
                             BlockOf b_of) {
  bool ascending = true;
  for (int64_t g = 0; g < gr.count && ascending; ++g)
    ascending = std::is_sorted(gr.index_of(g), gr.index_of(g) + gr.rows(g));
  for_column_slices(cols, gr.begin(gr.count) * cols, [&](int64_t c0, int64_t c1) {
    std::vector<PackedB<T>> packed(static_cast<size_t>(gr.count));
    for (int64_t g = 0; g < gr.count; ++g) {
      const MatrixView<const T> b = b_of(g);
      packed[size_t(g)].pack({b.base + c0 * b.col_stride, b.row_stride, b.col_stride}, k, c1 - c0);
    }
    const int64_t block = ascending ? std::max<int64_t>(1, kRowBlockBytes / int64_t((c1 - c0) * sizeof(T))) : c_rows;
    for (int64_t t0 = 0; t0 < c_rows; t0 += block) {
      for (int64_t g = 0; g < gr.count; ++g) {
        const int64_t* index = gr.index_of(g);
        const int64_t* end = index + gr.rows(g);
        const int64_t lo = ascending ? std::lower_bound(index, end, t0) - index : 0;
        const int64_t hi = ascending ? std::lower_bound(index + lo, end, t0 + block) - index : gr.rows(g);
        indexed_gemm<T>(hi - lo, {a + (gr.begin(g) + lo) * k, k}, packed[size_t(g)], {c + c0, cols, 1, index + lo},
                        true);
      }
    }
  });
}

}  // namespace

void gather_linear(const Tensor& out, const Tensor& x, const Tensor& index, const Tensor& offsets, const Tensor& w,
                   const Tensor& bias) {
  const Groups gr = groups_of(index, offsets);
  const int64_t din = x.size(1), dout = w.size(1);
  dispatch_floating(x.dtype(), "gather_linear", [&]<class T>() {
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t g = 0; g < gr.count; ++g) {
      const int64_t n = gr.rows(g);
      T* og = out.data<T>() + gr.begin(g) * dout;
      if (bias.defined()) {
        const T* b = bias.data<T>() + g * bias.stride(0);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < dout; ++j) og[i * dout + j] = b[j * bias.stride(1)];
      }
      // out_g = x[index_g] @ w_g^T (+ bias)
      indexed_gemm<T>(n, dout, din, {x.data<T>(), din, 1, gr.index_of(g)}, block_transposed<T>(w, g), {og, dout},
                      bias.defined());
    }
  });
}

void gather_linear_backward(const Tensor& grad_x, const Tensor& grad_w, const Tensor& grad_bias,
                            const Tensor& grad_out, const Tensor& x, const Tensor& index, const Tensor& offsets,
                            const Tensor& w) {
  const Groups gr = groups_of(index, offsets);
  const int64_t din = x.size(1), dout = w.size(1);
  dispatch_floating(x.dtype(), "gather_linear_backward", [&]<class T>() {
    const T* go = grad_out.data<T>();
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t g = 0; g < gr.count; ++g) {
      const int64_t n = gr.rows(g);
      const T* gog = go + gr.begin(g) * dout;
      // grad_w[g] = grad_out_g^T @ x[index_g]: grad_out_g's columns packed as A, the gathered rows of x
      // packed as B (each read once, front to back), written in place.
      indexed_gemm<T>(dout, din, n, {gog, 1, dout}, {x.data<T>(), din, 1, gr.index_of(g)},
                      {grad_w.data<T>() + g * dout * din, din}, false);
      if (grad_bias.defined()) {
        T* gb = grad_bias.data<T>() + g * dout;
        std::fill(gb, gb + dout, T(0));
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < dout; ++j) gb[j] += gog[i * dout + j];
      }
    }
    // grad_x[index_g] += grad_out_g @ w_g, a column slice at a time.
    fill(grad_x, 0.0);
    add_into_scattered_rows<T>(grad_x.data<T>(), grad_x.size(0), din, go, dout, gr,
                               [&](int64_t g) { return block<T>(w, g); });
  });
}

void scatter_linear(const Tensor& out, const Tensor& src, const Tensor& index, const Tensor& offsets,
                    const Tensor& w) {
  const Groups gr = groups_of(index, offsets);
  const int64_t din = src.size(1), dout = w.size(1);
  dispatch_floating(src.dtype(), "scatter_linear", [&]<class T>() {
    // out[index_g] += src_g @ w_g^T, a column slice of out at a time.
    fill(out, 0.0);
    add_into_scattered_rows<T>(out.data<T>(), out.size(0), dout, src.data<T>(), din, gr,
                               [&](int64_t g) { return block_transposed<T>(w, g); });
  });
}

void scatter_linear_backward(const Tensor& grad_src, const Tensor& grad_w, const Tensor& grad_out,
                             const Tensor& src, const Tensor& index, const Tensor& offsets, const Tensor& w) {
  const Groups gr = groups_of(index, offsets);
  const int64_t din = src.size(1), dout = w.size(1);
  dispatch_floating(src.dtype(), "scatter_linear_backward", [&]<class T>() {
    const T* go = grad_out.data<T>();
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t g = 0; g < gr.count; ++g) {
      const int64_t n = gr.rows(g);
      const T* sg = src.data<T>() + gr.begin(g) * din;
      // grad_src_g = grad_out[index_g] @ w_g ; grad_w[g] = grad_out[index_g]^T @ src_g
      indexed_gemm<T>(n, din, dout, {go, dout, 1, gr.index_of(g)}, block<T>(w, g),
                      {grad_src.data<T>() + gr.begin(g) * din, din}, false);
      indexed_gemm<T>(dout, din, n, {go, 1, dout, nullptr, gr.index_of(g)}, {sg, din},
                      {grad_w.data<T>() + g * dout * din, din}, false);
    }
  });
}

}  // namespace moh::cpu
