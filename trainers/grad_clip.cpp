// Global gradient norm and clipping (see grad_clip.h).
#include "trainers/grad_clip.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "core/dispatch.h"
#include "core/ops.h"

namespace moh {

namespace {

constexpr int64_t kChunk = 16384;

struct SumSq {
  double sum = 0;
  bool finite = true;
};

// Sum of squares of a contiguous gradient: chunk partial sums (in parallel) added in chunk order.
// x - x is 0 for finite x and nan otherwise, which flags inf/nan without a branch.
template <class T>
SumSq sum_squares(const T* x, int64_t n) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> sums(static_cast<size_t>(chunks)), flags(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    double acc = 0, flag = 0;
    const int64_t end = std::min(n, (c + 1) * kChunk);
    for (int64_t i = c * kChunk; i < end; ++i) {
      const double v = double(x[i]);
      acc += v * v;
      flag += v - v;
    }
    sums[size_t(c)] = acc;
    flags[size_t(c)] = flag;
  }
  SumSq out;
  for (int64_t c = 0; c < chunks; ++c) {
    out.sum += sums[size_t(c)];
    out.finite = out.finite && flags[size_t(c)] == 0;
  }
  return out;
}

// The distinct parameters that have a gradient, in order.
std::vector<std::pair<std::string, ag::Variable>> with_grads(const NamedParameters& params) {
  std::vector<std::pair<std::string, ag::Variable>> out;
  std::set<const void*> seen;
  for (const auto& [name, var] : params) {
    MOH_CHECK(var.defined(), "clip_grad_norm: parameter '", name, "' is undefined");
    if (!var.grad().defined() || !seen.insert(var.impl().get()).second) continue;
    MOH_CHECK(out.empty() || var.grad().device() == out[0].second.grad().device(), "clip_grad_norm: the gradient of '",
              name, "' is on ", var.grad().device(), " but that of '", out[0].first, "' on ",
              out[0].second.grad().device());
    out.emplace_back(name, var);
  }
  return out;
}

// The op path: per gradient, its float64 sum of squares and sum(g - g) (0, or nan for inf/nan
// elements), stacked into one tensor read back once.
std::vector<SumSq> sums_with_ops(const std::vector<Tensor>& grads) {
  std::vector<Tensor> parts;
  for (const Tensor& g : grads) {
    const Tensor g64 = g.to(DType::Float64);
    parts.push_back(sum(mul(g64, g64)));
    parts.push_back(sum(sub(g64, g64)));
  }
  const std::vector<double> host = stack(parts, 0).to_vector<double>();
  std::vector<SumSq> out(grads.size());
  for (size_t i = 0; i < grads.size(); ++i) out[i] = {host[2 * i], host[2 * i + 1] == 0};
  return out;
}

GradNorm norm_of(const std::vector<std::pair<std::string, ag::Variable>>& params, UpdatePath path) {
  std::vector<Tensor> grads;
  for (const auto& [name, var] : params) grads.push_back(var.grad());
  std::vector<SumSq> sums(grads.size());
  if (!grads.empty() && !runs_host_loop(path, grads[0])) {
    sums = sums_with_ops(grads);
  } else {
    for (size_t i = 0; i < grads.size(); ++i) {
      const Tensor g = grads[i].contiguous();
      sums[i] = dispatch_floating(g.dtype(), "clip_grad_norm", [&]<class T>() {
        return sum_squares(g.data<T>(), g.numel());
      });
    }
  }
  GradNorm out;
  double total = 0;
  for (size_t i = 0; i < sums.size(); ++i) {
    total += sums[i].sum;
    if (!sums[i].finite && out.nonfinite.empty()) out.nonfinite = params[i].first;
  }
  out.norm = std::sqrt(total);
  return out;
}

}  // namespace

GradNorm grad_norm(const NamedParameters& params, UpdatePath path) { return norm_of(with_grads(params), path); }

GradNorm clip_grad_norm(const NamedParameters& params, double max_norm, UpdatePath path) {
  return clip_to_norm(params, grad_norm(params, path), max_norm);
}

GradNorm clip_to_norm(const NamedParameters& params, GradNorm norm, double max_norm) {
  MOH_CHECK(std::isfinite(max_norm) && max_norm > 0, "clip_grad_norm: max_norm must be finite and > 0, got ",
            max_norm);
  const double coef = max_norm / (norm.norm + 1e-6);
  if (!norm.finite() || !(coef < 1)) return norm;
  norm.scale = coef;
  for (const auto& [name, var] : with_grads(params)) {
    Tensor g = var.grad();
    if (g.is_contiguous()) {
      mul_(g, norm.scale);
    } else {
      ag::Variable(var).set_grad(mul(g, norm.scale));
    }
  }
  return norm;
}

}  // namespace moh
