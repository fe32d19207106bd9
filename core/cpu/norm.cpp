// CPU normalisation kernels. Row statistics and the per-row backward dot products accumulate in
// double; rows run in parallel. grad_weight / grad_bias are column sums over rows: rows are cut
// into at most kMaxBlocks fixed blocks whose double partial sums are added in block order, which
// keeps them deterministic for any thread count.
#include "core/kernels/norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cpu/lane_reduce.h"
#include "core/cpu/strided_loop.h"
#include "core/dispatch.h"

namespace moh::cpu {
namespace {

constexpr int64_t kMaxBlocks = 64;

struct RowStats {
  double mean;
  double rstd;
};

template <class T>
RowStats row_stats(const T* x, int64_t d, bool centered, double eps) {
  const double mean = centered ? lane_sum(d, [&](int64_t i) { return double(x[i]); }) / double(d) : 0.0;
  const double var = lane_sum(d, [&](int64_t i) {
    const double c = double(x[i]) - mean;
    return c * c;
  });
  return {mean, 1.0 / std::sqrt(var / double(d) + eps)};
}

}  // namespace

void norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& out,
                  const Tensor& mean, const Tensor& rstd) {
  const int64_t d = x.size(-1), rows = x.numel() / d;
  const bool centered = mean.defined();
  dispatch_floating(x.dtype(), centered ? "layer_norm" : "rms_norm", [&]<class T>() {
    const T* px = x.data<T>();
    const T* pw = weight.defined() ? weight.data<T>() : nullptr;
    const T* pb = bias.defined() ? bias.data<T>() : nullptr;
    T* py = out.data<T>();
    T* pmean = centered ? mean.data<T>() : nullptr;
    T* prstd = rstd.data<T>();
#pragma omp parallel for schedule(static) if (rows > 1 && rows * d >= 2 * kParallelGrain)
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = px + r * d;
      T* yr = py + r * d;
      const RowStats s = row_stats(xr, d, centered, eps);
      for (int64_t i = 0; i < d; ++i) {
        double v = (double(xr[i]) - s.mean) * s.rstd;
        if (pw) v *= double(pw[i]);
        if (pb) v += double(pb[i]);
        yr[i] = T(v);
      }
      if (pmean) pmean[r] = T(s.mean);
      prstd[r] = T(s.rstd);
    }
  });
}

void norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                   const Tensor& weight, const Tensor& grad_x, const Tensor& grad_weight, const Tensor& grad_bias) {
  const int64_t d = x.size(-1), rows = x.numel() / d;
  const bool centered = mean.defined();
  dispatch_floating(x.dtype(), centered ? "layer_norm_backward" : "rms_norm_backward", [&]<class T>() {
    const T* pg = grad_out.data<T>();
    const T* px = x.data<T>();
    const T* pmean = centered ? mean.data<T>() : nullptr;
    const T* prstd = rstd.data<T>();
    const T* pw = weight.defined() ? weight.data<T>() : nullptr;
    T* pgx = grad_x.data<T>();
    const bool want_w = grad_weight.defined(), want_b = grad_bias.defined();
    const int64_t blocks = std::min(rows, kMaxBlocks);
    const int64_t rows_per_block = blocks == 0 ? 0 : (rows + blocks - 1) / blocks;
    std::vector<double> part_w(want_w ? size_t(blocks * d) : 0), part_b(want_b ? size_t(blocks * d) : 0);
#pragma omp parallel for schedule(static) if (blocks > 1 && rows * d >= 2 * kParallelGrain)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      std::vector<double> xhat(static_cast<size_t>(d)), gy(static_cast<size_t>(d));
      double* acc_w = want_w ? part_w.data() + blk * d : nullptr;
      double* acc_b = want_b ? part_b.data() + blk * d : nullptr;
      for (int64_t r = blk * rows_per_block; r < std::min(rows, (blk + 1) * rows_per_block); ++r) {
        const T* gr = pg + r * d;
        const T* xr = px + r * d;
        const double mu = pmean ? double(pmean[r]) : 0.0, rs = double(prstd[r]);
        for (int64_t i = 0; i < d; ++i) {
          xhat[size_t(i)] = (double(xr[i]) - mu) * rs;
          gy[size_t(i)] = pw ? double(gr[i]) * double(pw[i]) : double(gr[i]);
        }
        const double sum_gy = centered ? lane_sum(d, [&](int64_t i) { return gy[size_t(i)]; }) : 0.0;
        const double sum_gy_xhat = lane_sum(d, [&](int64_t i) { return gy[size_t(i)] * xhat[size_t(i)]; });
        const double a = centered ? sum_gy / double(d) : 0.0, b = sum_gy_xhat / double(d);
        T* gxr = pgx + r * d;
        for (int64_t i = 0; i < d; ++i) gxr[i] = T(rs * (gy[size_t(i)] - a - xhat[size_t(i)] * b));
        if (acc_w)
          for (int64_t i = 0; i < d; ++i) acc_w[i] += double(gr[i]) * xhat[size_t(i)];
        if (acc_b)
          for (int64_t i = 0; i < d; ++i) acc_b[i] += double(gr[i]);
      }
    }
    auto reduce_columns = [&](const std::vector<double>& part, const Tensor& dst) {
      T* out = dst.data<T>();
#pragma omp parallel for schedule(static) if (blocks * d >= 2 * kParallelGrain)
      for (int64_t i = 0; i < d; ++i) {
        double s = 0;
        for (int64_t blk = 0; blk < blocks; ++blk) s += part[size_t(blk * d + i)];
        out[i] = T(s);
      }
    };
    if (want_w) reduce_columns(part_w, grad_weight);
    if (want_b) reduce_columns(part_b, grad_bias);
  });
}

}  // namespace moh::cpu
