// layer_norm / rms_norm and their backward over the last dim: argument checks, contiguity and
// allocation. Saved statistics are 1-D [rows] tensors (rows = numel / last dim) of the input dtype.
#include "core/kernels/norm.h"
#include "core/dispatch.h"
#include "core/ops.h"
#include "core/ops/checks.h"

namespace moh {
namespace {

int64_t check_input(const char* op, const char* name, const Tensor& x) {
  check_float_argument(op, name, x);
  MOH_CHECK(x.dim() >= 1 && x.size(-1) >= 1, op, ": expected ", name,
            " with at least one dim and a non-empty last dim, got ", describe(x));
  return x.size(-1);
}

// An optional [D] parameter (weight or bias) matching x; returns it contiguous (or undefined).
Tensor check_param(const char* op, const char* name, const Tensor& p, const Tensor& x) {
  if (!p.defined()) return p;
  MOH_CHECK(p.shape() == Shape{x.size(-1)} && p.dtype() == x.dtype() && p.device() == x.device(), op, ": expected ",
            name, " of shape [", x.size(-1), "] with the dtype and device of the input ", describe(x), ", got ",
            describe(p));
  return p.contiguous();
}

// A saved [rows] statistic from the forward (statistic_dtype of x, on x's device).
Tensor check_saved(const char* op, const char* name, const Tensor& s, const Tensor& x) {
  const int64_t rows = x.numel() / x.size(-1);
  const DType dtype = statistic_dtype(x.dtype());
  MOH_CHECK(s.defined() && s.dim() == 1 && s.size(0) == rows && s.dtype() == dtype && s.device() == x.device(), op,
            ": expected saved ", name, " of shape [", rows, "] ", dtype_name(dtype), " on ", x.device(), " for ",
            describe(x), ", got ", s.defined() ? describe(s) : std::string("an undefined tensor"));
  return s.contiguous();
}

NormForward norm_forward(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                         bool centered) {
  const int64_t d = check_input(op, "input", x);
  MOH_CHECK(eps >= 0, op, ": eps must be >= 0, got ", eps);
  Tensor w = check_param(op, "weight", weight, x), b = check_param(op, "bias", bias, x);
  const int64_t rows = x.numel() / d;
  NormForward f;
  f.out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (centered) f.mean = Tensor::empty({rows}, statistic_dtype(x.dtype()), x.device());
  f.rstd = Tensor::empty({rows}, statistic_dtype(x.dtype()), x.device());
  MOH_BACKEND(x.device(), norm_forward, x.contiguous(), w, b, eps, f.out, f.mean, f.rstd);
  return f;
}

NormBackward norm_backward(const char* op, const Tensor& grad_out, const Tensor& x, const NormForward& saved,
                           const Tensor& weight, bool has_bias, bool centered) {
  const int64_t d = check_input(op, "input", x);
  check_input(op, "grad_out", grad_out);
  MOH_CHECK(grad_out.shape() == x.shape() && grad_out.dtype() == x.dtype() && grad_out.device() == x.device(), op,
            ": grad_out ", describe(grad_out), " must match the input ", describe(x));
  Tensor w = check_param(op, "weight", weight, x);
  Tensor mean = centered ? check_saved(op, "mean", saved.mean, x) : Tensor();
  Tensor rstd = check_saved(op, "rstd", saved.rstd, x);
  NormBackward b;
  b.grad_x = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (w.defined()) b.grad_weight = Tensor::empty({d}, x.dtype(), x.device());
  if (has_bias) b.grad_bias = Tensor::empty({d}, x.dtype(), x.device());
  MOH_BACKEND(x.device(), norm_backward, grad_out.contiguous(), x.contiguous(), mean, rstd, w, b.grad_x,
              b.grad_weight, b.grad_bias);
  return b;
}

}  // namespace

NormForward layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  return norm_forward("layer_norm", x, weight, bias, eps, true);
}

NormBackward layer_norm_backward(const Tensor& grad_out, const Tensor& x, const NormForward& saved,
                                 const Tensor& weight, bool has_bias) {
  return norm_backward("layer_norm_backward", grad_out, x, saved, weight, has_bias, true);
}

NormForward rms_norm(const Tensor& x, const Tensor& weight, double eps) {
  return norm_forward("rms_norm", x, weight, Tensor(), eps, false);
}

NormBackward rms_norm_backward(const Tensor& grad_out, const Tensor& x, const NormForward& saved,
                               const Tensor& weight) {
  return norm_backward("rms_norm_backward", grad_out, x, saved, weight, false, false);
}

}  // namespace moh
