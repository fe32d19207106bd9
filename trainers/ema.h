// Ema: an exponential moving average of a module's parameters (DiT keeps one for sampling),
//   ema = decay * ema + (1 - decay) * param    after each optimizer step,
// held by parameter name as clones on the parameters' device and dtype and updated with the
// in-place tensor ops (so it runs wherever the parameters live). Its state_dict() is the averaged
// weights under the model's names, ready for a checkpoint or for Module::load_state_dict;
// EmaWeightsGuard lends them to the model for an evaluation.
#pragma once

#include "layers/module.h"

namespace moh {

class Ema {
 public:
  // Starts as a copy of every parameter of `model`; decay in [0, 1].
  Ema(const Module& model, double decay);

  // Folds the current parameters in. `model` must have the same parameter names and shapes.
  void update(const Module& model);
  // Writes the averaged values into the parameters of `model` (same names and shapes).
  void copy_to(Module& model) const;

  double decay() const { return decay_; }
  // Averaged weights by parameter name (aliases: clone to keep a snapshot).
  const StateDict& state_dict() const { return shadow_; }
  // Copies values in by name (dtype converted); a missing, unexpected or misshapen entry throws.
  void load_state_dict(const StateDict& state);

 private:
  // (shadow, parameter) pairs for `model`, checking the names and shapes match.
  std::vector<std::pair<Tensor, Tensor>> pair_with(const Module& model, const char* what) const;

  double decay_;
  StateDict shadow_;
};

// While alive, the parameters of `model` hold the EMA's averaged weights (evaluation with eval.use_ema);
// the destructor puts the trained values back, bit for bit, so training goes on unchanged.
class EmaWeightsGuard {
 public:
  EmaWeightsGuard(const Ema& ema, Module& model);
  ~EmaWeightsGuard();
  EmaWeightsGuard(const EmaWeightsGuard&) = delete;
  EmaWeightsGuard& operator=(const EmaWeightsGuard&) = delete;

 private:
  std::vector<std::pair<Tensor, Tensor>> saved_;  // (parameter, its trained value)
};

}  // namespace moh
