// Optimizer bookkeeping: parameter registration and decay groups, the step loop, state export.
#include "trainers/optimizer.h"

#include <cmath>
#include <set>
#include <tuple>

#include "core/factory.h"

namespace moh {

namespace {

bool matches_entry(const std::string& name, const std::string& entry) {
  if (entry.empty()) return false;
  if (name == entry) return true;
  return name.size() > entry.size() && name.ends_with(entry) && name[name.size() - entry.size() - 1] == '.';
}

std::string step_key(const std::string& name) { return name + "/step"; }

// The elements of a parameter-shaped contiguous tensor that `p` updates, as a flat view.
Tensor owned(const Optimizer::Param& p, const Tensor& full) {
  return full.view({full.numel()}).narrow(0, p.offset, p.count);
}

}  // namespace

bool decay_exempt(const std::string& name, const ag::Variable& param, const std::vector<std::string>& exempt) {
  MOH_CHECK(param.defined(), "decay_exempt: parameter '", name, "' is undefined");
  if (param.dim() <= 1) return true;
  for (const auto& entry : exempt)
    if (matches_entry(name, entry)) return true;
  return false;
}

Optimizer::Optimizer(const char* what, const NamedParameters& params, double lr,
                     const std::vector<std::string>& no_decay, std::vector<std::string> state_names)
    : what_(what), state_names_(std::move(state_names)) {
  set_lr(lr);
  std::set<std::string> names;
  std::set<const void*> seen;  // tied weights (one Variable under two names) are updated once
  for (const auto& [name, var] : params) {
    MOH_CHECK(var.defined(), what_, ": parameter '", name, "' is undefined");
    if (!var.requires_grad() || !seen.insert(var.impl().get()).second) continue;
    MOH_CHECK(!name.empty() && name.find('/') == std::string::npos, what_, ": invalid parameter name '", name,
              "' (must be non-empty and contain no '/')");
    MOH_CHECK(names.insert(name).second, what_, ": parameter name '", name, "' appears twice");
    const Tensor& data = var.data();
    MOH_CHECK(data.dtype() == DType::Float32 || data.dtype() == DType::Float64, what_, ": parameter ",
              var.describe(), " ('", name, "') must be float32 or float64");
    MOH_CHECK(data.is_contiguous(), what_, ": parameter '", name, "' is not contiguous");
    Param p{name, var, !decay_exempt(name, var, no_decay), 0, {}, 0, var.numel()};
    const DType state_dtype = data.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
    for (size_t i = 0; i < state_names_.size(); ++i) p.state.push_back(zeros(data.shape(), state_dtype, data.device()));
    params_.push_back(std::move(p));
  }
}

void Optimizer::set_lr(double lr) {
  MOH_CHECK(std::isfinite(lr) && lr >= 0, what_, ": learning rate must be finite and >= 0, got ", lr);
  lr_ = lr;
}

void Optimizer::step() {
  for (const auto& p : params_) {  // check everything first, so a failure updates nothing
    const Tensor& data = p.var.data();
    MOH_CHECK(data.is_contiguous(), what_, ": parameter '", p.name, "' is no longer contiguous");
    const Tensor grad = p.var.grad();
    MOH_CHECK(!grad.defined() || grad.device() == data.device(), what_, ": the gradient of '", p.name, "' is on ",
              grad.device(), " but the parameter on ", data.device());
    for (const Tensor& s : p.state)
      MOH_CHECK(s.device() == data.device(), what_, ": the state of '", p.name, "' is on ", s.device(),
                " but the parameter on ", data.device(), " (move the model before building its optimizer)");
  }
  for (auto& p : params_) {
    Tensor grad = p.var.grad();
    if (!grad.defined()) continue;
    ++p.steps;
    if (p.count == 0) continue;
    update(p, owned(p, p.var.data()), owned(p, grad.contiguous()));
  }
  ++step_count_;
}

void Optimizer::shard(const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  MOH_CHECK(ranges.size() == params_.size(), what_, "::shard: ", ranges.size(), " ranges for ", params_.size(),
            " parameters");
  for (size_t i = 0; i < ranges.size(); ++i) {
    const auto [offset, count] = ranges[i];
    MOH_CHECK(offset >= 0 && count >= 0 && offset + count <= params_[i].var.numel(), what_, "::shard: range [",
              offset, ", ", offset + count, ") is outside parameter '", params_[i].name, "' of ",
              params_[i].var.numel(), " elements");
  }
  for (size_t i = 0; i < ranges.size(); ++i) {
    Param& p = params_[i];
    std::tie(p.offset, p.count) = ranges[i];
    for (Tensor& t : p.state) t = zeros({p.count}, t.dtype(), t.device());
  }
  sharded_ = true;
}

int64_t Optimizer::state_bytes() const {
  int64_t bytes = 0;
  for (const auto& p : params_)
    for (const Tensor& t : p.state) bytes += int64_t(t.nbytes());
  return bytes;
}

void Optimizer::zero_grad() {
  for (auto& p : params_) p.var.zero_grad();
}

std::map<std::string, Tensor> Optimizer::state_dict() const {
  std::map<std::string, Tensor> out;
  for (const auto& p : params_) {
    for (size_t i = 0; i < state_names_.size(); ++i) out[p.name + "/" + state_names_[i]] = p.state[i];
    out[step_key(p.name)] = scalar_tensor(double(p.steps), DType::Int64);
  }
  out["step"] = scalar_tensor(double(step_count_), DType::Int64);
  return out;
}

void Optimizer::load_state_dict(const std::map<std::string, Tensor>& state) {
  auto find = [&](const std::string& key) -> const Tensor& {
    auto it = state.find(key);
    MOH_CHECK(it != state.end(), what_, "::load_state_dict: missing entry '", key, "'");
    MOH_CHECK(it->second.defined(), what_, "::load_state_dict: entry '", key, "' is undefined");
    return it->second;
  };
  auto count = [&](const std::string& key) {
    const Tensor& t = find(key);
    MOH_CHECK(t.numel() == 1 && t.dim() <= 1, what_, "::load_state_dict: entry '", key,
              "' must hold one step count, got ", describe(t));
    const double v = t.item<double>();
    MOH_CHECK(v >= 0 && v == std::floor(v), what_, "::load_state_dict: entry '", key,
              "' must be a non-negative integer, got ", v);
    return int64_t(v);
  };
  std::set<std::string> expected{"step"};
  for (const auto& p : params_) {
    for (size_t i = 0; i < state_names_.size(); ++i) {
      const std::string key = p.name + "/" + state_names_[i];
      const Tensor& t = find(key);
      MOH_CHECK(t.shape() == p.var.shape(), what_, "::load_state_dict: entry '", key, "' is ", describe(t),
                ", expected shape ", shape_str(p.var.shape()));
      expected.insert(key);
    }
    count(step_key(p.name));
    expected.insert(step_key(p.name));
  }
  const int64_t total = count("step");
  for (const auto& [key, _] : state)
    MOH_CHECK(expected.count(key), what_, "::load_state_dict: unexpected entry '", key, "'");
  for (auto& p : params_) {
    for (size_t i = 0; i < state_names_.size(); ++i) {
      const Tensor& full = state.at(p.name + "/" + state_names_[i]);
      p.state[i].copy_(sharded_ ? owned(p, full.contiguous()) : full);
    }
    p.steps = count(step_key(p.name));
  }
  step_count_ = total;
}

}  // namespace moh
