// AdamW as torch.optim.AdamW (amsgrad off): per parameter with gradient g at its step t,
//   p -= lr * wd * p                 (decoupled decay; wd = 0 in the no-decay group)
//   m = beta1 * m + (1 - beta1) * g,  v = beta2 * v + (1 - beta2) * g^2
//   p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)   (eps outside the sqrt)
// State "exp_avg" (m) and "exp_avg_sq" (v). CPU parameters: one fused in-place pass per parameter
// (OpenMP over big tensors); other devices: the same rule as in-place ops (core/ops.h), a few
// elementwise kernels per parameter. Either way the arithmetic runs in the parameter dtype (float32
// master weights, or float64) with the scalars rounded to it once.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "core/macros.h"
#include "trainers/optimizer.h"

namespace moh {

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
  std::vector<std::string> no_decay;  // extra names or dotted suffixes trained without decay
};

// The scalars of one parameter's update, rounded to the arithmetic type T once.
template <class T>
struct AdamWCoefficients {
  T decay;      // 1 - lr * wd
  T beta1, one_minus_beta1, beta2, one_minus_beta2;
  T step_size;  // lr / (1 - beta1^t)
  T bc2_sqrt;   // sqrt(1 - beta2^t)
  T eps;
};

// One element's update (the rule above), shared with a future device kernel.
template <class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE void adamw_element(T& p, T& m, T& v, T g, const AdamWCoefficients<T>& c) {
  p *= c.decay;
  m = m * c.beta1 + g * c.one_minus_beta1;
  v = v * c.beta2 + g * g * c.one_minus_beta2;
  p -= c.step_size * (m / (std::sqrt(v) / c.bc2_sqrt + c.eps));
}

class AdamW : public Optimizer {
 public:
  // Throws on lr < 0, betas outside [0, 1), eps <= 0 or weight_decay < 0 (or non-finite values).
  AdamW(const NamedParameters& params, const AdamWOptions& options);
  std::string type_name() const override { return "AdamW"; }
  const AdamWOptions& options() const { return options_; }

 protected:
  void update(Param& p, const Tensor& value, const Tensor& grad) override;

 private:
  AdamWOptions options_;
};

}  // namespace moh
