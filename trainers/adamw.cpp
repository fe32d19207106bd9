// AdamW's fused CPU update.
#include "trainers/adamw.h"

#include <cmath>

#include "core/cpu/strided_loop.h"
#include "core/dispatch.h"

namespace moh {

namespace {

template <class T>
void adamw_loop(T* __restrict p, T* __restrict m, T* __restrict v, const T* __restrict g, int64_t n,
                const AdamWCoefficients<T> c) {
#pragma omp parallel for schedule(static) if (n > cpu::kParallelGrain)
  for (int64_t i = 0; i < n; ++i) adamw_element(p[i], m[i], v[i], g[i], c);
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
  dispatch_floating(grad.dtype(), "AdamW", [&]<class T>() {
    const AdamWCoefficients<T> c{T(1 - lr() * wd),
                                 T(options_.beta1),
                                 T(1 - options_.beta1),
                                 T(options_.beta2),
                                 T(1 - options_.beta2),
                                 T(lr() / (1 - std::pow(options_.beta1, t))),
                                 T(std::sqrt(1 - std::pow(options_.beta2, t))),
                                 T(options_.eps)};
    adamw_loop(value.data<T>(), p.state[0].data<T>(), p.state[1].data<T>(), grad.data<T>(),
               grad.numel(), c);
  });
}

}  // namespace moh
