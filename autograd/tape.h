// The thread-local tape: each differentiable call made with grad enabled and at least one input
// requiring grad appends a node (input edges, output slots, a backward closure holding the saved
// tensors). backward(loss) walks the nodes in reverse, frees each one as soon as it has run,
// accumulates into leaf .grad, fires leaf hooks as soon as a leaf's gradient is final, and
// leaves the tape empty. Nothing is recorded under NoGradGuard or while backward runs.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "autograd/variable.h"

namespace moh::ag {

bool grad_enabled();

// Disables recording on this thread for its lifetime; nestable.
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// needs[i]: whether input i wants a gradient (a closure may skip computing the others).
using Needs = std::vector<bool>;
// A backward closure gets one gradient per output (zeros for outputs no gradient reached) and
// returns one per input (undefined = zero or not needed). A returned gradient may have the
// broadcast shape of the op and be a strided view: the engine sums it back to the input shape.
using BackwardFn =
    std::function<std::vector<Tensor>(const std::vector<Tensor>& grad_outputs, const Needs& needs)>;
using BackwardFn1 = std::function<std::vector<Tensor>(const Tensor& grad_output, const Needs& needs)>;

// True when a call on `inputs` would be recorded (grad enabled, some defined input requires grad).
bool should_record(const std::vector<Variable>& inputs);
// Wraps the outputs of a function: records a node when should_record(inputs), in which case the
// outputs are non-leaves requiring grad; otherwise they are plain leaves. `op` must be a literal.
Variable record(const char* op, Tensor output, const std::vector<Variable>& inputs, BackwardFn1 backward);
std::vector<Variable> record_multi(const char* op, std::vector<Tensor> outputs,
                                   const std::vector<Variable>& inputs, BackwardFn backward);

// What a closure saves for the gradient of `consumer` only (e.g. the other factor of a product):
// `t` when consumer requires grad, else nothing, so unneeded activations are not kept alive.
inline Tensor saved_for(const Variable& consumer, const Tensor& t) {
  return consumer.defined() && consumer.requires_grad() ? t : Tensor();
}

// Backpropagates from `loss` (grad_out = 1 when undefined, which needs a 1-element loss) through
// every node on this thread's tape, then clears the tape. Leaf gradients add to existing .grad.
void backward(const Variable& loss, Tensor grad_out = {});
// Drops every recorded node (evaluation code that recorded by mistake).
void clear_tape();
size_t tape_size();

}  // namespace moh::ag
