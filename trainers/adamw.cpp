// AdamW's update: the fused CPU loop and the op path for other devices (see adamw.h).
#include "trainers/adamw.h"

#include <cmath>

#include "core/cpu/strided_loop.h"
#include "core/dispatch.h"
#include "core/ops.h"

namespace moh {

namespace {

template <class T>
void adamw_loop(T* __restrict p, T* __restrict m, T* __restrict v, const T* __restrict g, int64_t n,
                const AdamWCoefficients<T> c) {
#pragma omp parallel for schedule(static) if (n > cpu::kParallelGrain)
  for (int64_t i = 0; i < n; ++i) adamw_element(p[i], m[i], v[i], g[i], c);
}

// The rule of adamw.h in place with ops on tensors of any device (all flat [n], one dtype).
void adamw_ops(Tensor p, Tensor m, Tensor v, const Tensor& g, const AdamWCoefficients<double>& c) {
  if (c.decay != 1) mul_(p, c.decay);
  mul_(m, c.beta1);
  add_(m, g, c.one_minus_beta1);
  mul_(v, c.beta2);
  add_(v, mul(g, g), c.one_minus_beta2);
  add_(p, div(m, add(div(sqrt(v), c.bc2_sqrt), c.eps)), -c.step_size);
}

}  // namespace

AdamW::AdamW(const NamedParameters& params, const AdamWOptions& options)
    : Optimizer("AdamW", params, options.lr, options.no_decay, {"exp_avg", "exp_avg_sq"}), options_(options) {
  auto beta_ok = [](double b) { return b >= 0 && b < 1; };
  MOH_CHECK(beta_ok(options.beta1) && beta_ok(options.beta2), "AdamW: betas must be in [0, 1), got (",
            options.beta1, ", ", options.beta2, ")");
  MOH_CHECK(std::isfinite(options.eps) && options.eps > 0, "AdamW: eps must be finite and > 0, got ", options.eps);
  MOH_CHECK(std::isfinite(options.weight_decay) && options.weight_decay >= 0,
            "AdamW: weight_decay must be finite and >= 0, got ", options.weight_decay);
}

void AdamW::update(Param& p, const Tensor& value, const Tensor& grad) {
  const double t = double(p.steps), wd = p.decay ? options_.weight_decay : 0.0;
  const AdamWCoefficients<double> c{1 - lr() * wd,
                                    options_.beta1,
                                    1 - options_.beta1,
                                    options_.beta2,
                                    1 - options_.beta2,
                                    lr() / (1 - std::pow(options_.beta1, t)),
                                    std::sqrt(1 - std::pow(options_.beta2, t)),
                                    options_.eps};
  if (!runs_host_loop(update_path(), value)) {
    adamw_ops(value, flat(p.state[0]), flat(p.state[1]), grad, c);
    return;
  }
  dispatch_floating(grad.dtype(), "AdamW", [&]<class T>() {
    const AdamWCoefficients<T> ct{T(c.decay), T(c.beta1), T(c.one_minus_beta1), T(c.beta2),
                                  T(c.one_minus_beta2), T(c.step_size), T(c.bc2_sqrt), T(c.eps)};
    adamw_loop(value.data<T>(), p.state[0].data<T>(), p.state[1].data<T>(), grad.data<T>(), grad.numel(), ct);
  });
}

}  // namespace moh
