// ModuleList: an ordered container of child modules named 0, 1, 2, ... (PyTorch's nn.ModuleList and
// nn.Sequential name their children the same way, so state-dict names such as `blocks.3.attn.qkv.weight`
// match). It only registers; the owner keeps typed handles and runs the children itself.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "layers/module.h"

namespace moh {

class ModuleList : public Module {
 public:
  // `type` is the name summaries show ("ModuleList", or "Sequential" where PyTorch's model has one).
  explicit ModuleList(std::string type = "ModuleList") : type_(std::move(type)) {}
  std::string type_name() const override { return type_; }
  // Registers `module` as the next child and returns it.
  template <class M>
  std::shared_ptr<M> add(std::shared_ptr<M> module) {
    return register_module(std::to_string(named_children().size()), std::move(module));
  }

 private:
  std::string type_;
};

}  // namespace moh
