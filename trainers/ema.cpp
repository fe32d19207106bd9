// Exponential moving average of parameters.
#include "trainers/ema.h"

#include <cmath>

#include "core/ops.h"

namespace moh {

namespace {

void check_entries(const StateDict& expected, const StateDict& given, const char* what) {
  for (const auto& [name, t] : expected) {
    auto it = given.find(name);
    MOH_CHECK(it != given.end(), what, ": missing parameter '", name, "'");
    MOH_CHECK(it->second.defined() && it->second.shape() == t.shape(), what, ": parameter '", name, "' is ",
              describe(it->second), ", expected shape ", shape_str(t.shape()));
  }
  for (const auto& [name, _] : given)
    MOH_CHECK(expected.count(name), what, ": unexpected parameter '", name, "'");
}

StateDict parameters_of(const Module& model) {
  StateDict out;
  for (const auto& [name, var] : model.named_parameters()) out[name] = var.data();
  return out;
}

}  // namespace

Ema::Ema(const Module& model, double decay) : decay_(decay) {
  MOH_CHECK(decay >= 0 && decay <= 1, "Ema: decay must be in [0, 1], got ", decay);
  for (const auto& [name, t] : parameters_of(model)) shadow_[name] = t.clone();
}

std::vector<std::pair<Tensor, Tensor>> Ema::pair_with(const Module& model, const char* what) const {
  const StateDict params = parameters_of(model);
  check_entries(shadow_, params, what);
  std::vector<std::pair<Tensor, Tensor>> out;
  for (const auto& [name, t] : shadow_) out.emplace_back(t, params.at(name));
  return out;
}

void Ema::update(const Module& model) {
  for (auto& [avg, param] : pair_with(model, "Ema::update")) {
    mul_(avg, decay_);
    add_(avg, param, 1 - decay_);
  }
}

void Ema::copy_to(Module& model) const {
  for (auto& [avg, param] : pair_with(model, "Ema::copy_to")) param.copy_(avg);
}

EmaWeightsGuard::EmaWeightsGuard(const Ema& ema, Module& model) {
  for (const auto& [name, var] : model.named_parameters()) saved_.emplace_back(var.data(), var.data().clone());
  ema.copy_to(model);
}

EmaWeightsGuard::~EmaWeightsGuard() {
  for (auto& [param, value] : saved_) param.copy_(value);
}

void Ema::load_state_dict(const StateDict& state) {
  check_entries(shadow_, state, "Ema::load_state_dict");
  for (auto& [name, t] : shadow_) t.copy_(state.at(name));
}

}  // namespace moh
