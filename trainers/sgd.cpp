// SGD's update: the fused CPU loop and the op path for other devices (see sgd.h).
#include "trainers/sgd.h"

#include <cmath>

#include "core/cpu/strided_loop.h"
#include "core/dispatch.h"
#include "core/ops.h"

namespace moh {

namespace {

// buf == nullptr: no momentum.
template <class T>
void sgd_loop(T* __restrict p, T* __restrict buf, const T* __restrict g, int64_t n, T lr, T wd, T momentum,
              T damp_keep, bool first, bool nesterov) {
#pragma omp parallel for schedule(static) if (n > cpu::kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    T d = g[i] + wd * p[i];
    if (buf) {
      buf[i] = first ? d : buf[i] * momentum + damp_keep * d;
      d = nesterov ? d + momentum * buf[i] : buf[i];
    }
    p[i] -= lr * d;
  }
}

// The rule of sgd.h in place with ops on tensors of any device (flat [n], one dtype); `buf` is
// undefined without momentum.
void sgd_ops(Tensor p, Tensor buf, const Tensor& g, double lr, double wd, double momentum, double damp_keep,
             bool first, bool nesterov) {
  Tensor d = wd != 0 ? add(g, mul(p, wd)) : g;
  if (buf.defined()) {
    if (first) {
      buf.copy_(d);
    } else {
      mul_(buf, momentum);
      add_(buf, d, damp_keep);
    }
    d = nesterov ? add(d, mul(buf, momentum)) : buf;
  }
  add_(p, d, -lr);
}

}  // namespace

Sgd::Sgd(const NamedParameters& params, const SgdOptions& options)
    : Optimizer("SGD", params, options.lr, options.no_decay,
                options.momentum != 0 ? std::vector<std::string>{"momentum_buffer"} : std::vector<std::string>{}),
      options_(options) {
  MOH_CHECK(std::isfinite(options.momentum) && options.momentum >= 0, "SGD: momentum must be finite and >= 0, got ",
            options.momentum);
  MOH_CHECK(options.dampening >= 0 && options.dampening <= 1, "SGD: dampening must be in [0, 1], got ",
            options.dampening);
  MOH_CHECK(std::isfinite(options.weight_decay) && options.weight_decay >= 0,
            "SGD: weight_decay must be finite and >= 0, got ", options.weight_decay);
  MOH_CHECK(!options.nesterov || (options.momentum > 0 && options.dampening == 0),
            "SGD: nesterov needs momentum > 0 and dampening == 0, got momentum ", options.momentum, ", dampening ",
            options.dampening);
}

void Sgd::update(Param& p, const Tensor& value, const Tensor& grad) {
  const double wd = p.decay ? options_.weight_decay : 0.0;
  if (!runs_host_loop(update_path(), value)) {
    sgd_ops(value, p.state.empty() ? Tensor() : flat(p.state[0]), grad, lr(), wd, options_.momentum,
            1 - options_.dampening, p.steps == 1, options_.nesterov);
    return;
  }
  dispatch_floating(grad.dtype(), "SGD", [&]<class T>() {
    T* buf = p.state.empty() ? nullptr : p.state[0].data<T>();
    sgd_loop(value.data<T>(), buf, grad.data<T>(), grad.numel(), T(lr()), T(wd), T(options_.momentum),
             T(1 - options_.dampening), p.steps == 1, options_.nesterov);
  });
}

}  // namespace moh
