// checkpoint (see checkpoint.h): the unrecorded forward, then the recomputing backward closure.
#include "autograd/checkpoint.h"

#include <set>
#include <utility>

#include "autograd/grad_mode.h"
#include "autograd/tape.h"
#include "core/factory.h"

namespace moh::ag {
namespace {

// Takes the captured leaves' gradients and hooks aside while the nested backward accumulates into
// them, so that it sees no earlier gradient and fires no hook; gives them back on destruction.
class LeafStash {
 public:
  explicit LeafStash(const std::vector<std::shared_ptr<detail::VariableImpl>>& leaves) : leaves_(leaves) {
    for (const auto& impl : leaves_) {
      grads_.push_back(std::move(impl->grad));
      impl->grad = Tensor();
      hooks_.push_back(std::move(impl->hooks));
      impl->hooks.clear();
    }
  }
  ~LeafStash() {
    for (size_t i = 0; i < leaves_.size(); ++i) {
      leaves_[i]->grad = std::move(grads_[i]);
      leaves_[i]->hooks = std::move(hooks_[i]);
    }
  }
  LeafStash(const LeafStash&) = delete;
  LeafStash& operator=(const LeafStash&) = delete;

  // The gradient the nested backward left in leaf i (undefined when it did not reach it).
  Tensor take(size_t i) {
    Tensor g = std::move(leaves_[i]->grad);
    leaves_[i]->grad = Tensor();
    return g;
  }

 private:
  const std::vector<std::shared_ptr<detail::VariableImpl>>& leaves_;
  std::vector<Tensor> grads_;
  std::vector<std::vector<Hook>> hooks_;
};

}  // namespace

std::vector<Variable> checkpoint(const CheckpointFn& fn, const std::vector<Variable>& inputs,
                                 const std::vector<Variable>& captured) {
  std::vector<Variable> edges = inputs;
  edges.insert(edges.end(), captured.begin(), captured.end());
  if (!should_record(edges)) return fn(inputs);
  std::set<const detail::VariableImpl*> distinct;
  for (const Variable& c : captured) {
    if (!c.defined()) continue;
    MOH_CHECK(c.is_leaf(), "checkpoint: captured ", c.describe(),
              " is not a leaf (pass values computed on the tape as inputs)");
    MOH_CHECK(distinct.insert(c.impl().get()).second, "checkpoint: captured ", c.describe(), " is listed twice");
  }

  std::vector<Variable> outputs;
  {
    NoGradGuard no_grad;
    outputs = fn(inputs);
  }
  std::vector<Tensor> values;
  for (const Variable& out : outputs) {
    MOH_CHECK(out.defined() && is_floating(out.dtype()), "checkpoint: fn returned ",
              out.defined() ? out.describe() : "an undefined output", "; every output must be floating");
    values.push_back(out.data());
  }
  std::vector<Tensor> saved;
  for (const Variable& in : inputs) saved.push_back(in.defined() ? in.data() : Tensor());
  std::vector<std::shared_ptr<detail::VariableImpl>> leaves;
  for (const Variable& c : captured) leaves.push_back(c.defined() ? c.impl() : nullptr);

  BackwardFn backward_fn = [fn, saved = std::move(saved), leaves = std::move(leaves)](
                               const std::vector<Tensor>& grad_outputs, const Needs& needs) {
    const size_t n = saved.size();
    std::vector<Variable> fresh;  // new leaves over the saved inputs
    for (size_t i = 0; i < n; ++i)
      fresh.push_back(saved[i].defined() ? Variable(saved[i], needs[i]) : Variable());
    std::vector<std::shared_ptr<detail::VariableImpl>> stashed;
    for (size_t j = 0; j < leaves.size(); ++j)
      if (needs[n + j]) stashed.push_back(leaves[j]);
    LeafStash stash(stashed);
    try {
      GradModeGuard recording(true);
      std::vector<Variable> recomputed = fn(fresh);
      MOH_CHECK(recomputed.size() == grad_outputs.size(), "checkpoint: the recomputation returned ",
                recomputed.size(), " outputs, the forward ", grad_outputs.size(),
                " (fn must compute the same thing both times)");
      // One seed node hands each output its gradient exactly (no arithmetic on the way).
      Variable seed = record("checkpoint_seed", zeros({}, grad_outputs[0].dtype(), grad_outputs[0].device()),
                             recomputed, [grad_outputs](const Tensor&, const Needs&) { return grad_outputs; });
      if (seed.requires_grad()) backward(seed);
    } catch (...) {
      clear_tape();  // what the recomputation recorded before failing
      throw;
    }
    std::vector<Tensor> grads;
    for (size_t i = 0; i < n; ++i) grads.push_back(needs[i] ? fresh[i].grad() : Tensor());
    size_t next = 0;
    for (size_t j = 0; j < leaves.size(); ++j) grads.push_back(needs[n + j] ? stash.take(next++) : Tensor());
    return grads;
  };
  return record_multi("checkpoint", std::move(values), edges, std::move(backward_fn));
}

}  // namespace moh::ag
