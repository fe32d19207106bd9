// Module registration, traversal, state dicts and summaries.
#include "layers/module.h"

#include <set>
#include <sstream>

#include "core/error.h"

namespace moh {

void Module::check_new_name(const std::string& name) const {
  MOH_CHECK(!name.empty() && name.find('.') == std::string::npos, type_name(), ": invalid member name '", name,
            "' (must be non-empty and contain no dots)");
  auto taken = [&](const auto& list) {
    for (const auto& [n, _] : list)
      if (n == name) return true;
    return false;
  };
  MOH_CHECK(!taken(params_) && !taken(buffers_) && !taken(children_), type_name(), ": member name '", name,
            "' registered twice");
}

ag::Variable& Module::register_parameter(const std::string& name, Tensor value, bool requires_grad) {
  check_new_name(name);
  ag::Variable v(std::move(value), requires_grad);
  v.set_name(name);
  params_.emplace_back(name, std::move(v));
  return params_.back().second;
}

Tensor& Module::register_buffer(const std::string& name, Tensor value) {
  check_new_name(name);
  buffers_.emplace_back(name, std::move(value));
  return buffers_.back().second;
}

void Module::collect_parameters(const std::string& prefix,
                                std::vector<std::pair<std::string, ag::Variable>>& out) const {
  for (const auto& [name, v] : params_) out.emplace_back(prefix + name, v);
  for (const auto& [name, child] : children_) child->collect_parameters(prefix + name + ".", out);
}

void Module::collect_buffers(const std::string& prefix, std::vector<std::pair<std::string, Tensor*>>& out) {
  for (auto& [name, t] : buffers_) out.emplace_back(prefix + name, &t);
  for (auto& [name, child] : children_) child->collect_buffers(prefix + name + ".", out);
}

std::vector<std::pair<std::string, ag::Variable>> Module::named_parameters() const {
  std::vector<std::pair<std::string, ag::Variable>> out;
  collect_parameters("", out);
  return out;
}

std::vector<ag::Variable> Module::parameters() const {
  std::vector<ag::Variable> out;
  for (auto& [_, v] : named_parameters()) out.push_back(v);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor*>> refs;
  const_cast<Module*>(this)->collect_buffers("", refs);
  std::vector<std::pair<std::string, Tensor>> out;
  for (auto& [name, t] : refs) out.emplace_back(name, *t);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (auto& [_, v] : named_parameters()) n += v.numel();
  return n;
}

std::vector<std::string> Module::no_weight_decay_names() const {
  std::vector<std::string> out = no_weight_decay();
  for (const auto& [name, child] : children_)
    for (const std::string& n : child->no_weight_decay_names()) out.push_back(name + "." + n);
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [_, child] : children_) child->train(on);
}

void Module::to(Device device) {
  for (auto& [_, v] : params_) {
    ag::detail::VariableImpl& impl = *v.impl();
    impl.data = impl.data.to(device);
    if (impl.grad.defined()) impl.grad = impl.grad.to(device);
  }
  for (auto& [_, t] : buffers_) t = t.to(device);
  for (auto& [_, child] : children_) child->to(device);
}

StateDict Module::state_dict() const {
  StateDict out;
  for (auto& [name, v] : named_parameters()) out[name] = v.data();
  for (auto& [name, t] : named_buffers()) out[name] = t;
  return out;
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  std::vector<std::pair<std::string, Tensor>> targets;
  for (auto& [name, v] : named_parameters()) targets.emplace_back(name, v.data());
  std::vector<std::pair<std::string, Tensor*>> buffers;
  collect_buffers("", buffers);
  for (auto& [name, t] : buffers) targets.emplace_back(name, *t);

  std::set<std::string> expected;
  std::vector<std::string> missing;
  for (auto& [name, t] : targets) {
    expected.insert(name);
    auto it = state.find(name);
    if (it == state.end()) {
      missing.push_back(name);
      continue;
    }
    MOH_CHECK(it->second.shape() == t.shape(), "load_state_dict: '", name, "' has shape ", it->second.shape(),
              " in the state but the model expects ", t.shape());
  }
  std::vector<std::string> unexpected;
  for (auto& [name, _] : state)
    if (!expected.count(name)) unexpected.push_back(name);
  if (strict) {
    auto join = [](const std::vector<std::string>& v) {
      std::string s;
      for (size_t i = 0; i < v.size() && i < 8; ++i) s += (i ? ", '" : "'") + v[i] + "'";
      if (v.size() > 8) s += str_cat(" and ", v.size() - 8, " more");
      return s;
    };
    MOH_CHECK(missing.empty(), "load_state_dict: missing ", missing.size(), " entries: ", join(missing));
    MOH_CHECK(unexpected.empty(), "load_state_dict: unexpected ", unexpected.size(), " entries: ", join(unexpected));
  }
  // All checks passed: only now write, so a failed load leaves the model untouched.
  for (auto& [name, t] : targets) {
    auto it = state.find(name);
    if (it != state.end()) t.copy_(it->second.to(t.device()));
  }
}

void Module::summary_lines(const std::string& name, int depth, std::string& out) const {
  std::ostringstream line;
  line << std::string(size_t(depth) * 2, ' ') << (name.empty() ? "" : name + ": ") << type_name();
  std::string extra = extra_repr();
  if (!extra.empty()) line << "(" << extra << ")";
  line << "  params=" << num_parameters();
  out += line.str() + "\n";
  for (auto& [child_name, child] : children_) child->summary_lines(child_name, depth + 1, out);
}

std::string Module::summary() const {
  std::string out;
  summary_lines("", 0, out);
  out += str_cat("total parameters: ", num_parameters(), "\n");
  return out;
}

}  // namespace moh
