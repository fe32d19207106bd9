// Dropout (element-wise) and DropPath (stochastic depth: a whole sample's residual branch), both
// scaling kept values by 1/(1-p) and acting only in training mode with p > 0 (otherwise forward
// returns its input itself). Randomness: each layer holds a shared_ptr to a Generator given at
// construction (separate from the init generator); a model passes one dropout generator to all
// its dropout layers, so masks follow one Philox stream whose (seed, offset) the owner seeds per
// run/rank and can checkpoint. The generator is required only when p > 0.
#pragma once

#include <memory>
#include <string>

#include "autograd/variable.h"
#include "core/random.h"
#include "layers/module.h"

namespace moh {

class Dropout : public Module {
 public:
  // p in [0, 1]; p == 1 zeroes everything.
  explicit Dropout(double p, std::shared_ptr<Generator> gen = nullptr);
  std::string type_name() const override { return "Dropout"; }
  std::string extra_repr() const override;
  ag::Variable forward(const ag::Variable& x) const;
  double p() const { return p_; }

 private:
  double p_;
  std::shared_ptr<Generator> gen_;
};

class DropPath : public Module {
 public:
  // p in [0, 1]: the probability of dropping a sample's branch.
  explicit DropPath(double p, std::shared_ptr<Generator> gen = nullptr);
  std::string type_name() const override { return "DropPath"; }
  std::string extra_repr() const override;
  // x [B, ...]: sample b is multiplied by keep_b / (1 - p), keep_b ~ Bernoulli(1 - p).
  ag::Variable forward(const ag::Variable& x) const;
  double p() const { return p_; }

 private:
  double p_;
  std::shared_ptr<Generator> gen_;
};

}  // namespace moh
