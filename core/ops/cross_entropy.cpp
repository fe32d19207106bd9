// cross_entropy and its backward: shape/dtype/device checks and allocation; the fused CPU kernel
// validates target values (it reads them anyway). loss is 0-d for Mean/Sum and [N] for None.
#include "core/kernels/cross_entropy.h"
#include "core/dispatch.h"
#include "core/ops.h"
#include "core/ops/checks.h"

namespace moh {
namespace {

const char* reduction_name(Reduction r) {
  return r == Reduction::Mean ? "mean" : r == Reduction::Sum ? "sum" : "none";
}

void check_inputs(const char* op, const Tensor& logits, const Tensor& target, double label_smoothing) {
  MOH_CHECK(logits.defined() && target.defined(), op, ": logits and target must be defined tensors");
  MOH_CHECK(is_math_float(logits), op, ": expected ", math_float_names(logits), " logits, got ", describe(logits));
  MOH_CHECK(logits.dim() == 2 && logits.size(1) >= 1, op, ": expected logits of shape [N, C] with C >= 1, got ",
            describe(logits));
  MOH_CHECK(target.dtype() == DType::Int64 && target.shape() == Shape{logits.size(0)}, op,
            ": expected an int64 target of shape [", logits.size(0), "] for logits ", describe(logits), ", got ",
            describe(target));
  MOH_CHECK(target.device() == logits.device(), op, ": logits ", describe(logits), " and target ", describe(target),
            " are on different devices");
  MOH_CHECK(label_smoothing >= 0 && label_smoothing <= 1, op, ": label_smoothing must be in [0, 1], got ",
            label_smoothing);
}

Shape loss_shape(const Tensor& logits, Reduction reduction) {
  return reduction == Reduction::None ? Shape{logits.size(0)} : Shape{};
}

}  // namespace

CrossEntropyForward cross_entropy(const Tensor& logits, const Tensor& target, double label_smoothing,
                                  int64_t ignore_index, Reduction reduction) {
  check_inputs("cross_entropy", logits, target, label_smoothing);
  CrossEntropyForward f;
  f.loss = Tensor::empty(loss_shape(logits, reduction), logits.dtype(), logits.device());
  f.lse = Tensor::empty({logits.size(0)}, statistic_dtype(logits.dtype()), logits.device());
  MOH_BACKEND(logits.device(), cross_entropy, logits.contiguous(), target.contiguous(), label_smoothing, ignore_index,
              reduction, f.loss, f.lse);
  return f;
}

Tensor cross_entropy_backward(const Tensor& grad_loss, const Tensor& logits, const Tensor& target, const Tensor& lse,
                              double label_smoothing, int64_t ignore_index, Reduction reduction) {
  const char* op = "cross_entropy_backward";
  check_inputs(op, logits, target, label_smoothing);
  const Shape expected = loss_shape(logits, reduction);
  MOH_CHECK(grad_loss.defined() && grad_loss.shape() == expected && grad_loss.dtype() == logits.dtype() &&
                grad_loss.device() == logits.device(),
            op, ": expected grad_loss of shape ", shape_str(expected), " (reduction ", reduction_name(reduction),
            ") with the dtype and device of the logits ", describe(logits), ", got ",
            grad_loss.defined() ? describe(grad_loss) : std::string("an undefined tensor"));
  const DType lse_dtype = statistic_dtype(logits.dtype());
  MOH_CHECK(lse.defined() && lse.shape() == Shape{logits.size(0)} && lse.dtype() == lse_dtype &&
                lse.device() == logits.device(),
            op, ": expected the saved lse of shape [", logits.size(0), "] ", dtype_name(lse_dtype), " on ",
            logits.device(), " for the logits ", describe(logits), ", got ",
            lse.defined() ? describe(lse) : std::string("an undefined tensor"));
  Tensor grad = Tensor::empty(logits.shape(), logits.dtype(), logits.device());
  MOH_BACKEND(logits.device(), cross_entropy_backward, grad_loss.contiguous(), logits.contiguous(),
              target.contiguous(), lse.contiguous(), label_smoothing, ignore_index, reduction, grad);
  return grad;
}

}  // namespace moh
