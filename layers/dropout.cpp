// Dropout through ag::dropout; DropPath as x * mask with a per-sample mask [B, 1, ..., 1] drawn
// by bernoulli and pre-scaled by 1/(1-p) (the mask carries no gradient).
#include "layers/dropout.h"

#include "autograd/dropout_fns.h"
#include "autograd/elementwise_fns.h"
#include "core/ops.h"

namespace moh {
namespace {

void check_rate(const char* layer, double p, const std::shared_ptr<Generator>& gen) {
  MOH_CHECK(p >= 0.0 && p <= 1.0, layer, ": p must be in [0, 1], got ", p);
  MOH_CHECK(p == 0.0 || gen != nullptr, layer, "(p=", p, "): p > 0 needs a generator");
}

}  // namespace

Dropout::Dropout(double p, std::shared_ptr<Generator> gen) : p_(p), gen_(std::move(gen)) {
  check_rate("Dropout", p, gen_);
}

std::string Dropout::extra_repr() const { return str_cat("p=", p_); }

ag::Variable Dropout::forward(const ag::Variable& x) const {
  MOH_CHECK(x.defined(), "Dropout(", extra_repr(), "): the input is undefined");
  if (!is_training() || p_ == 0.0) return x;
  return ag::dropout(x, p_, *gen_);
}

DropPath::DropPath(double p, std::shared_ptr<Generator> gen) : p_(p), gen_(std::move(gen)) {
  check_rate("DropPath", p, gen_);
}

std::string DropPath::extra_repr() const { return str_cat("p=", p_); }

ag::Variable DropPath::forward(const ag::Variable& x) const {
  MOH_CHECK(x.defined() && x.dim() >= 1, "DropPath(", extra_repr(), "): expected an input [B, ...], got ",
            x.describe());
  if (!is_training() || p_ == 0.0) return x;
  Shape mask_shape(size_t(x.dim()), 1);
  mask_shape[0] = x.size(0);
  const double keep = 1.0 - p_;
  Tensor mask = bernoulli(mask_shape, keep, *gen_, x.dtype(), x.device());
  if (keep > 0.0) mul_(mask, 1.0 / keep);
  return ag::mul(x, ag::Variable(mask));
}

}  // namespace moh
