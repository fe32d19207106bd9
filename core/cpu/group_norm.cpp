// CPU group_norm (core/kernels/group_norm.h). Statistics in double, one pass per row: the sums of
// x - K and (x - K)^2 with K the row's first value (a shift that keeps a large common offset from
// cancelling). The output pass applies per channel y = x * scale + shift. The backward's first pass
// sums, per (sample, channel) plane, g and g * (x - mean); they give each row's two dot products and,
// summed over samples in order, grad_weight and grad_bias; the second pass writes grad_x. Rows and
// planes run in parallel; every sum has one fixed order, so no result depends on the thread count.
#include "core/kernels/group_norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cpu/lane_reduce.h"
#include "core/cpu/strided_loop.h"
#include "core/dispatch.h"

namespace moh::cpu {
namespace {

struct Layout {
  int64_t n, c, s, groups, cg;
  int64_t rows() const { return n * groups; }
  int64_t row_size() const { return cg * s; }
  int64_t planes() const { return n * c; }
  bool parallel() const { return n * c * s >= 2 * kParallelGrain; }
};

Layout layout(const Tensor& x, int64_t groups) {
  const int64_t n = x.size(0), c = x.size(1);
  return {n, c, n * c == 0 ? 0 : x.numel() / (n * c), groups, c / groups};
}

template <class T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

void group_norm_forward(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias, double eps,
                        const Tensor& out, const Tensor& mean, const Tensor& rstd) {
  const Layout l = layout(x, groups);
  dispatch_floating(x.dtype(), "group_norm", [&]<class T>() {
    const T* px = x.data<T>();
    const T *pw = data_or_null<T>(weight), *pb = data_or_null<T>(bias);
    T *py = out.data<T>(), *pmean = mean.data<T>(), *prstd = rstd.data<T>();
    const int64_t d = l.row_size();
#pragma omp parallel for schedule(static) if (l.rows() > 1 && l.parallel())
    for (int64_t r = 0; r < l.rows(); ++r) {
      const T* xr = px + r * d;
      const double shift = double(xr[0]);
      const SumPair sums = lane_sum_pair(
          d, [&](int64_t i) { return double(xr[i]) - shift; },
          [&](int64_t i) {
            const double v = double(xr[i]) - shift;
            return v * v;
          });
      const double centre = sums.first / double(d);
      const double var = std::max(0.0, sums.second / double(d) - centre * centre);
      const double mu = shift + centre, rs = 1.0 / std::sqrt(var + eps);
      pmean[r] = T(mu);
      prstd[r] = T(rs);
      const int64_t c0 = (r % l.groups) * l.cg;
      for (int64_t ci = 0; ci < l.cg; ++ci) {
        const double scale = pw ? rs * double(pw[c0 + ci]) : rs;
        const double offset = (pb ? double(pb[c0 + ci]) : 0.0) - mu * scale;
        const T* xp = xr + ci * l.s;
        T* yp = py + r * d + ci * l.s;
        for (int64_t i = 0; i < l.s; ++i) yp[i] = T(double(xp[i]) * scale + offset);
      }
    }
  });
}

void group_norm_backward(const Tensor& grad_out, const Tensor& x, int64_t groups, const Tensor& mean,
                         const Tensor& rstd, const Tensor& weight, const Tensor& grad_x, const Tensor& grad_weight,
                         const Tensor& grad_bias) {
  const Layout l = layout(x, groups);
  dispatch_floating(x.dtype(), "group_norm_backward", [&]<class T>() {
    const T *pg = grad_out.data<T>(), *px = x.data<T>(), *pmean = mean.data<T>(), *prstd = rstd.data<T>();
    const T* pw = data_or_null<T>(weight);
    T* pgx = grad_x.data<T>();
    // Per plane (sample, channel): sum g and sum g * (x - mean).
    std::vector<double> sum_g(size_t(l.planes())), sum_gx(size_t(l.planes()));
#pragma omp parallel for schedule(static) if (l.planes() > 1 && l.parallel())
    for (int64_t p = 0; p < l.planes(); ++p) {
      const int64_t r = (p / l.c) * l.groups + (p % l.c) / l.cg;
      const double mu = double(pmean[r]);
      const T *gp = pg + p * l.s, *xp = px + p * l.s;
      const SumPair sums = lane_sum_pair(
          l.s, [&](int64_t i) { return double(gp[i]); },
          [&](int64_t i) { return double(gp[i]) * (double(xp[i]) - mu); });
      sum_g[size_t(p)] = sums.first;
      sum_gx[size_t(p)] = sums.second;
    }
    // dx = rstd * (g * w - a - xhat * b), a = mean(g * w), b = mean(g * w * xhat) over the row.
#pragma omp parallel for schedule(static) if (l.planes() > 1 && l.parallel())
    for (int64_t p = 0; p < l.planes(); ++p) {
      const int64_t n = p / l.c, c = p % l.c, group = c / l.cg, r = n * l.groups + group;
      const double mu = double(pmean[r]), rs = double(prstd[r]), d = double(l.row_size());
      double gy = 0, gy_xhat = 0;
      for (int64_t ci = group * l.cg; ci < (group + 1) * l.cg; ++ci) {
        const double w = pw ? double(pw[ci]) : 1.0;
        gy += w * sum_g[size_t(n * l.c + ci)];
        gy_xhat += w * sum_gx[size_t(n * l.c + ci)];
      }
      const double a = gy / d, b = gy_xhat * rs / d;
      const double g_scale = rs * (pw ? double(pw[c]) : 1.0), x_scale = rs * rs * b;
      const double offset = mu * x_scale - rs * a;
      const T *gp = pg + p * l.s, *xp = px + p * l.s;
      T* gxp = pgx + p * l.s;
      for (int64_t i = 0; i < l.s; ++i) gxp[i] = T(double(gp[i]) * g_scale - double(xp[i]) * x_scale + offset);
    }
    // Per channel, over samples in order.
    T* pgw = grad_weight.defined() ? grad_weight.data<T>() : nullptr;
    T* pgb = grad_bias.defined() ? grad_bias.data<T>() : nullptr;
    for (int64_t c = 0; c < l.c && (pgw || pgb); ++c) {
      double w_sum = 0, b_sum = 0;
      for (int64_t n = 0; n < l.n; ++n) {
        const int64_t p = n * l.c + c, r = n * l.groups + c / l.cg;
        w_sum += sum_gx[size_t(p)] * double(prstd[r]);
        b_sum += sum_g[size_t(p)];
      }
      if (pgw) pgw[c] = T(w_sum);
      if (pgb) pgb[c] = T(b_sum);
    }
  });
}

}  // namespace moh::cpu
