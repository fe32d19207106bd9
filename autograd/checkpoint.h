// checkpoint: activation recomputation. The forward runs fn(inputs) without recording and keeps
// only the inputs; the backward runs fn again on the tape (a nested tape inside the outer
// backward), backpropagates the outputs' gradients through it and hands on the gradients of the
// inputs and of `captured`, the leaves fn reads besides its inputs (a module's parameters). The
// recorded node has the inputs and the captured leaves as its inputs, so captured leaves collect
// their gradient, and fire their hooks, when the outer walk reaches the node, as without
// recomputation; the values equal the non-recomputed ones bit for bit when fn is deterministic.
// fn must compute the same thing both times: same module modes, no fresh random draws, and the
// same number of outputs (each floating; outputs that need no gradient may be among them).
#pragma once

#include <functional>
#include <vector>

#include "autograd/variable.h"

namespace moh::ag {

using CheckpointFn = std::function<std::vector<Variable>(const std::vector<Variable>& inputs)>;

// When nothing would be recorded (grad disabled, or neither the inputs nor the captured leaves
// require grad) this is fn(inputs).
std::vector<Variable> checkpoint(const CheckpointFn& fn, const std::vector<Variable>& inputs,
                                 const std::vector<Variable>& captured);

}  // namespace moh::ag
