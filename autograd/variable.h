// Variable: a cheap handle (shared_ptr) to a tensor plus its autograd state. Leaves are made by
// the user (parameters, inputs); non-leaves are outputs of functions recorded on the tape and
// remember only their gradient slot on it (no link to the inputs, so no reference cycles).
// Only leaves keep .grad and hooks; a default-constructed Variable is undefined (an optional
// argument, e.g. a norm without weight).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace moh::ag {

class Variable;
using Hook = std::function<void(Variable&)>;

namespace detail {
struct VariableImpl {
  Tensor data;
  Tensor grad;  // leaves only; undefined until a backward reaches the leaf
  bool requires_grad = false;
  std::string name;
  std::vector<Hook> hooks;  // leaves only
  uint64_t generation = 0;  // 0: leaf; else the tape generation that produced it
  int64_t slot = -1;        // non-leaf: its gradient slot on that tape
};
}  // namespace detail

class Variable {
 public:
  Variable() = default;
  explicit Variable(Tensor data, bool requires_grad = false);
  explicit Variable(std::shared_ptr<detail::VariableImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  const Tensor& data() const;
  Tensor grad() const;
  bool requires_grad() const;
  void set_requires_grad(bool requires_grad);  // leaves only; floating dtypes only
  bool is_leaf() const;
  void zero_grad();            // grad becomes undefined
  void set_grad(Tensor grad);  // leaves only; later backwards accumulate into it in place
  Variable detach() const;     // a new leaf sharing data, requires_grad false
  const std::string& name() const;
  void set_name(std::string name);
  // Leaves only: fired once per backward that reaches this leaf, when its gradient for that
  // backward is final (every recorded node consuming it has run).
  void register_hook(Hook hook);

  const Shape& shape() const { return data().shape(); }
  int64_t size(int64_t d) const { return data().size(d); }
  DType dtype() const { return data().dtype(); }
  Device device() const { return data().device(); }
  int64_t dim() const { return data().dim(); }
  int64_t numel() const { return data().numel(); }

  const std::shared_ptr<detail::VariableImpl>& impl() const { return impl_; }
  // "'name' float32[2, 3] on cpu" (or without the name), for error messages.
  std::string describe() const;

 private:
  detail::VariableImpl& checked(const char* what) const;
  std::shared_ptr<detail::VariableImpl> impl_;
};

}  // namespace moh::ag
