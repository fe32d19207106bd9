// gather_linear / scatter_linear as tape nodes.
#include "autograd/grouped_linear_fns.h"

#include "autograd/tape.h"
#include "core/ops.h"

namespace moh::ag {

Variable gather_linear(const Variable& x, const Tensor& index, const Tensor& offsets, const Variable& w,
                       const Variable& bias) {
  const bool has_bias = bias.defined();
  Tensor out = moh::gather_linear(x.data(), index, offsets, w.data(), has_bias ? bias.data() : Tensor());
  std::vector<Variable> inputs{x, w};
  if (has_bias) inputs.push_back(bias);
  Tensor xd = x.data(), wd = w.data();
  return record("gather_linear", out, inputs, [xd, wd, index, offsets, has_bias](const Tensor& g, const Needs&) {
    GroupedLinearBackward grads = moh::gather_linear_backward(g, xd, index, offsets, wd, has_bias);
    std::vector<Tensor> out{grads.grad_input, grads.grad_weight};
    if (has_bias) out.push_back(grads.grad_bias);
    return out;
  });
}

Variable scatter_linear(const Variable& src, const Tensor& index, const Tensor& offsets, const Variable& w,
                        int64_t num_rows) {
  Tensor out = moh::scatter_linear(src.data(), index, offsets, w.data(), num_rows);
  Tensor sd = src.data(), wd = w.data();
  return record("scatter_linear", out, {src, w}, [sd, wd, index, offsets](const Tensor& g, const Needs&) {
    GroupedLinearBackward grads = moh::scatter_linear_backward(g, sd, index, offsets, wd);
    return std::vector<Tensor>{grads.grad_input, grads.grad_weight};
  });
}

}  // namespace moh::ag
