// Module: the base of every layer and model. A module owns named parameters (leaf Variables that
// require grad), named buffers (tensors saved with the state but not trained) and named child
// modules, all in registration order. Dotted names follow PyTorch (`blocks.3.attn.qkv.weight`), so
// state dicts can be exchanged with PyTorch/HF tools. Registration happens in constructors; names
// are unique within a module and never contain dots.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"
#include "core/tensor.h"

namespace moh {

using StateDict = std::map<std::string, Tensor>;

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Short class name shown in summaries ("Linear", "MoHAttention").
  virtual std::string type_name() const = 0;
  // Hyper-parameters shown in summaries ("in=384, out=1152, bias").
  virtual std::string extra_repr() const { return ""; }

  std::vector<std::pair<std::string, ag::Variable>> named_parameters() const;
  std::vector<ag::Variable> parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const { return children_; }
  int64_t num_parameters() const;

  // Training mode (dropout, drop-path and MoH's balance loss act only in training); recursive.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Names (relative to this module) of its own parameters of two or more dims that train without
  // weight decay, as timm's no_weight_decay(): position tables, class tokens. Parameters of at most
  // one dim (biases, norm scales) never decay; every other parameter does unless a module lists it.
  virtual std::vector<std::string> no_weight_decay() const { return {}; }
  // What this module and every descendant list, as full dotted names.
  std::vector<std::string> no_weight_decay_names() const;

  // Moves every parameter and buffer to `device` (keeping names, shapes and requires_grad).
  // Parameters move in place: every handle to a parameter (a layer's weight_ member, an
  // optimizer's or a hook's copy) sees the moved tensor. Buffers are replaced, so a module that
  // keeps its own handle to a buffer, or tensors outside its parameters and buffers, overrides
  // this to move them as well (calling Module::to first).
  virtual void to(Device device);

  // Parameters and buffers by dotted name (tensors alias the module's storage; clone to keep).
  StateDict state_dict() const;
  // Copies values in by name. Every parameter and buffer must be present with the same shape
  // (dtype is converted); a missing, unexpected or misshapen entry throws naming it. With
  // strict = false, missing and unexpected names are allowed (shapes are still checked).
  void load_state_dict(const StateDict& state, bool strict = true);

  // Readable tree with parameter counts per module and a total.
  std::string summary() const;

 protected:
  ag::Variable& register_parameter(const std::string& name, Tensor value, bool requires_grad = true);
  Tensor& register_buffer(const std::string& name, Tensor value);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    check_new_name(name);
    children_.emplace_back(name, module);
    return module;
  }

 private:
  void check_new_name(const std::string& name) const;
  void collect_parameters(const std::string& prefix, std::vector<std::pair<std::string, ag::Variable>>& out) const;
  void collect_buffers(const std::string& prefix, std::vector<std::pair<std::string, Tensor*>>& out);
  void summary_lines(const std::string& name, int depth, std::string& out) const;

  std::vector<std::pair<std::string, ag::Variable>> params_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// Puts a module in eval mode for the guard's lifetime and restores the mode it had, also when an
// exception leaves the scope (an evaluation that throws must not leave a model in eval mode).
class EvalModeGuard {
 public:
  explicit EvalModeGuard(Module& module) : module_(module), was_training_(module.is_training()) { module_.eval(); }
  ~EvalModeGuard() { module_.train(was_training_); }
  EvalModeGuard(const EvalModeGuard&) = delete;
  EvalModeGuard& operator=(const EvalModeGuard&) = delete;

 private:
  Module& module_;
  bool was_training_;
};

}  // namespace moh
