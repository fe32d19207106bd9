// conv2d's tape node: saves the input and weight tensors (not the columns: the backward rebuilds
// them chunk by chunk) and asks conv2d_backward for exactly the gradients in `needs`.
#include "autograd/conv_fns.h"

#include "autograd/tape.h"
#include "core/ops.h"

namespace moh::ag {

Variable conv2d(const Variable& x, const Variable& weight, const Variable& bias, const Conv2dParams& params) {
  Tensor out = moh::conv2d(x.data(), weight.data(), bias.defined() ? bias.data() : Tensor(), params);
  return record("conv2d", out, {x, weight, bias},
                [x = x.data(), w = weight.data(), params](const Tensor& g, const Needs& needs) {
                  const Conv2dGrads wanted{needs[0], needs[1], needs[2]};
                  Conv2dBackward grads = moh::conv2d_backward(g, x, w, params, wanted);
                  return std::vector<Tensor>{grads.grad_input, grads.grad_weight, grads.grad_bias};
                });
}

}  // namespace moh::ag
