// group_norm and its backward (core/ops.h): argument checks, contiguity and allocation. The saved
// statistics are [N * groups] tensors of statistic_dtype(x) on x's device.
#include "core/kernels/group_norm.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops.h"
#include "core/ops/checks.h"

namespace moh {
namespace {

// x [N, C, ...] with groups dividing C and non-empty groups.
void check_input(const char* op, const Tensor& x, int64_t groups) {
  check_float_argument(op, "input", x);
  MOH_CHECK(x.dim() >= 2, op, ": expected the input as [N, C, ...], got ", describe(x));
  const int64_t channels = x.size(1);
  MOH_CHECK(groups >= 1 && channels % groups == 0, op, ": groups ", groups, " must divide the ", channels,
            " channels of ", describe(x));
  MOH_CHECK(x.size(0) == 0 || x.numel() > 0, op, ": expected non-empty channel groups, got ", describe(x));
}

// An optional per-channel parameter: [C], the dtype and device of x; returned contiguous.
Tensor check_param(const char* op, const Tensor& p, const Tensor& x) {
  if (!p.defined()) return p;
  MOH_CHECK(p.shape() == Shape{x.size(1)}, op, ": expected the weight and bias as [", x.size(1), "], got ",
            describe(p));
  MOH_CHECK(p.dtype() == x.dtype() && p.device() == x.device(), op, ": the weight and bias ", describe(p),
            " must have the dtype and device of the input ", describe(x));
  return p.contiguous();
}

Tensor check_saved(const char* op, const char* name, const Tensor& s, const Tensor& x, int64_t groups) {
  const int64_t rows = x.size(0) * groups;
  const DType dtype = statistic_dtype(x.dtype());
  MOH_CHECK(s.defined() && s.dim() == 1 && s.size(0) == rows && s.dtype() == dtype && s.device() == x.device(), op,
            ": expected saved ", name, " of shape [", rows, "] ", dtype_name(dtype), " on ", x.device(), " for ",
            describe(x), " in ", groups, " groups, got ",
            s.defined() ? describe(s) : std::string("an undefined tensor"));
  return s.contiguous();
}

}  // namespace

NormForward group_norm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias, double eps) {
  const char* op = "group_norm";
  check_input(op, x, groups);
  MOH_CHECK(eps >= 0, op, ": eps must be >= 0, got ", eps);
  Tensor w = check_param(op, weight, x), b = check_param(op, bias, x);
  NormForward f;
  f.out = Tensor::empty(x.shape(), x.dtype(), x.device());
  f.mean = Tensor::empty({x.size(0) * groups}, statistic_dtype(x.dtype()), x.device());
  f.rstd = Tensor::empty({x.size(0) * groups}, statistic_dtype(x.dtype()), x.device());
  if (x.numel() > 0)
    MOH_BACKEND(x.device(), group_norm_forward, x.contiguous(), groups, w, b, eps, f.out, f.mean, f.rstd);
  return f;
}

NormBackward group_norm_backward(const Tensor& grad_out, const Tensor& x, int64_t groups, const NormForward& saved,
                                 const Tensor& weight, bool has_bias) {
  const char* op = "group_norm_backward";
  check_input(op, x, groups);
  check_float_argument(op, "grad_out", grad_out);
  MOH_CHECK(grad_out.shape() == x.shape() && grad_out.dtype() == x.dtype() && grad_out.device() == x.device(), op,
            ": grad_out ", describe(grad_out), " must match the input ", describe(x));
  Tensor w = check_param(op, weight, x);
  Tensor mean = check_saved(op, "mean", saved.mean, x, groups), rstd = check_saved(op, "rstd", saved.rstd, x, groups);
  NormBackward r;
  r.grad_x = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (w.defined()) r.grad_weight = zeros({x.size(1)}, x.dtype(), x.device());
  if (has_bias) r.grad_bias = zeros({x.size(1)}, x.dtype(), x.device());
  if (x.numel() > 0)
    MOH_BACKEND(x.device(), group_norm_backward, grad_out.contiguous(), x.contiguous(), groups, mean, rstd, w,
                r.grad_x, r.grad_weight, r.grad_bias);
  return r;
}

}  // namespace moh
