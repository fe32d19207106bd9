// SGD with momentum as torch.optim.SGD: per parameter with gradient g at its step t,
//   d = g + wd * p                                   (coupled L2 decay; wd = 0 in the no-decay group)
//   momentum > 0: b = (t == 1) ? d : momentum * b + (1 - dampening) * d
//                 d = nesterov ? d + momentum * b : b
//   p -= lr * d
// State "momentum_buffer" (b) only when momentum > 0. CPU parameters: one fused in-place pass per
// parameter; other devices: the same rule as in-place ops (core/ops.h).
#pragma once

#include <string>
#include <vector>

#include "trainers/optimizer.h"

namespace moh {

struct SgdOptions {
  double lr = 1e-2;
  double momentum = 0;
  double dampening = 0;
  bool nesterov = false;  // needs momentum > 0 and dampening == 0
  double weight_decay = 0;
  std::vector<std::string> no_decay;  // extra names or dotted suffixes trained without decay
};

class Sgd : public Optimizer {
 public:
  // Throws on lr < 0, momentum < 0, dampening outside [0, 1], weight_decay < 0 (or non-finite
  // values), or nesterov without momentum or with dampening.
  Sgd(const NamedParameters& params, const SgdOptions& options);
  std::string type_name() const override { return "SGD"; }
  const SgdOptions& options() const { return options_; }

 protected:
  void update(Param& p, const Tensor& value, const Tensor& grad) override;

 private:
  SgdOptions options_;
};

}  // namespace moh
