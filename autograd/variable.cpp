// Variable accessors and leaf-only mutators; the tape (tape.cpp) turns outputs into non-leaves.
#include "autograd/variable.h"

namespace moh::ag {

Variable::Variable(Tensor data, bool requires_grad) : impl_(std::make_shared<detail::VariableImpl>()) {
  MOH_CHECK(data.defined(), "Variable: cannot wrap an undefined tensor");
  impl_->data = std::move(data);
  set_requires_grad(requires_grad);
}

detail::VariableImpl& Variable::checked(const char* what) const {
  MOH_CHECK(impl_ != nullptr, "Variable::", what, ": undefined Variable");
  return *impl_;
}

const Tensor& Variable::data() const { return checked("data").data; }
Tensor Variable::grad() const { return checked("grad").grad; }
bool Variable::requires_grad() const { return checked("requires_grad").requires_grad; }
bool Variable::is_leaf() const { return checked("is_leaf").generation == 0; }
const std::string& Variable::name() const { return checked("name").name; }
void Variable::set_name(std::string name) { checked("set_name").name = std::move(name); }
void Variable::zero_grad() { checked("zero_grad").grad = Tensor(); }

void Variable::set_requires_grad(bool requires_grad) {
  auto& impl = checked("set_requires_grad");
  MOH_CHECK(impl.generation == 0, "Variable::set_requires_grad: ", describe(),
            " is not a leaf (detach() it first)");
  MOH_CHECK(!requires_grad || is_floating(impl.data.dtype()), "Variable::set_requires_grad: ", describe(),
            " is not floating point; only float tensors can require grad");
  impl.requires_grad = requires_grad;
}

void Variable::set_grad(Tensor grad) {
  auto& impl = checked("set_grad");
  MOH_CHECK(impl.generation == 0, "Variable::set_grad: ", describe(), " is not a leaf");
  if (grad.defined()) {
    MOH_CHECK(grad.shape() == impl.data.shape() && grad.dtype() == impl.data.dtype() &&
                  grad.device() == impl.data.device(),
              "Variable::set_grad: gradient ", moh::describe(grad), " does not match ", describe());
  }
  impl.grad = std::move(grad);
}

Variable Variable::detach() const {
  Variable out(checked("detach").data);
  out.impl_->name = impl_->name;
  return out;
}

void Variable::register_hook(Hook hook) {
  auto& impl = checked("register_hook");
  MOH_CHECK(impl.generation == 0, "Variable::register_hook: ", describe(),
            " is not a leaf; hooks are for leaves (parameters)");
  MOH_CHECK(hook != nullptr, "Variable::register_hook: empty hook for ", describe());
  impl.hooks.push_back(std::move(hook));
}

std::string Variable::describe() const {
  if (!impl_) return "undefined Variable";
  std::string text = moh::describe(impl_->data);
  return impl_->name.empty() ? text : "'" + impl_->name + "' " + text;
}

}  // namespace moh::ag
