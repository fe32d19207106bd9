// layer_norm / rms_norm / group_norm: one tape node each with inputs (x, weight[, bias]); the closure
// saves x, the weight and the row statistics, and calls the fused backward once for all gradients.
#include "autograd/norm_fns.h"

#include "autograd/tape.h"
#include "core/ops.h"

namespace moh::ag {
namespace {

Tensor data_or_undefined(const Variable& v) { return v.defined() ? v.data() : Tensor(); }

// The statistics backward needs; the output itself is the user's.
NormForward statistics(const NormForward& forward) { return {Tensor(), forward.mean, forward.rstd}; }

}  // namespace

Variable layer_norm(const Variable& x, const Variable& weight, const Variable& bias, double eps) {
  Tensor w = data_or_undefined(weight);
  NormForward forward = moh::layer_norm(x.data(), w, data_or_undefined(bias), eps);
  return record("layer_norm", forward.out, {x, weight, bias},
                [x = x.data(), w, saved = statistics(forward), has_bias = bias.defined()](const Tensor& g,
                                                                                          const Needs&) {
                  NormBackward grads = moh::layer_norm_backward(g, x, saved, w, has_bias);
                  return std::vector<Tensor>{grads.grad_x, grads.grad_weight, grads.grad_bias};
                });
}

Variable rms_norm(const Variable& x, const Variable& weight, double eps) {
  Tensor w = data_or_undefined(weight);
  NormForward forward = moh::rms_norm(x.data(), w, eps);
  return record("rms_norm", forward.out, {x, weight},
                [x = x.data(), w, saved = statistics(forward)](const Tensor& g, const Needs&) {
                  NormBackward grads = moh::rms_norm_backward(g, x, saved, w);
                  return std::vector<Tensor>{grads.grad_x, grads.grad_weight};
                });
}

Variable group_norm(const Variable& x, int64_t groups, const Variable& weight, const Variable& bias, double eps) {
  Tensor w = data_or_undefined(weight);
  NormForward forward = moh::group_norm(x.data(), groups, w, data_or_undefined(bias), eps);
  return record("group_norm", forward.out, {x, weight, bias},
                [x = x.data(), groups, w, saved = statistics(forward), has_bias = bias.defined()](const Tensor& g,
                                                                                                  const Needs&) {
                  NormBackward grads = moh::group_norm_backward(g, x, groups, saved, w, has_bias);
                  return std::vector<Tensor>{grads.grad_x, grads.grad_weight, grads.grad_bias};
                });
}

}  // namespace moh::ag
