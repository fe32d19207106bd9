// Front end of conv2d / conv2d_backward: validation of shapes, parameters, dtypes and devices,
// contiguous operands and output allocation; the backends (core/cpu/conv, core/cuda/conv) receive
// contiguous NCHW tensors and trust the geometry.
#include "core/kernels/conv.h"
#include "core/dispatch.h"
#include "core/ops.h"
#include "core/ops/checks.h"

namespace moh {
namespace {

std::string describe_params(const Conv2dParams& p) {
  return str_cat("stride (", p.stride_h, ", ", p.stride_w, "), padding (", p.pad_h, ", ", p.pad_w, "), dilation (",
                 p.dilation_h, ", ", p.dilation_w, "), groups ", p.groups);
}

// Checks x, weight and the parameters together; returns the geometry.
ConvGeometry check_conv(const char* op, const Tensor& x, const Tensor& weight, const Conv2dParams& p) {
  check_float_argument(op, "input", x);
  check_float_argument(op, "weight", weight);
  MOH_CHECK(x.dim() == 4, op, ": expected the input as [N, C, H, W], got ", describe(x));
  MOH_CHECK(weight.dim() == 4, op, ": expected the weight as [O, C / groups, KH, KW], got ", describe(weight));
  MOH_CHECK(weight.dtype() == x.dtype() && weight.device() == x.device(), op, ": the weight ", describe(weight),
            " must have the dtype and device of the input ", describe(x));
  MOH_CHECK(p.stride_h >= 1 && p.stride_w >= 1 && p.dilation_h >= 1 && p.dilation_w >= 1 && p.pad_h >= 0 &&
                p.pad_w >= 0 && p.groups >= 1,
            op, ": strides, dilations and groups must be >= 1 and padding >= 0, got ", describe_params(p));
  MOH_CHECK(x.size(1) % p.groups == 0 && weight.size(0) % p.groups == 0, op, ": groups ", p.groups,
            " must divide the input channels ", x.size(1), " and the output channels ", weight.size(0));
  MOH_CHECK(weight.size(1) * p.groups == x.size(1), op, ": the weight ", describe(weight), " expects ",
            weight.size(1) * p.groups, " input channels (", weight.size(1), " per group x ", p.groups,
            " groups), the input ", describe(x), " has ", x.size(1));
  MOH_CHECK(weight.size(0) >= 1 && weight.size(1) >= 1 && weight.size(2) >= 1 && weight.size(3) >= 1, op,
            ": the weight needs at least one output and input channel and a non-empty kernel, got ",
            describe(weight));
  const ConvGeometry g = conv_geometry(x.shape(), weight.shape(), p);
  MOH_CHECK(g.ho >= 1 && g.wo >= 1, op, ": the kernel ", g.kh, "x", g.kw, " with ", describe_params(p),
            " does not fit the input ", describe(x), " (output ", g.ho, "x", g.wo, ")");
  return g;
}

Tensor check_bias(const char* op, const Tensor& bias, const Tensor& x, int64_t channels) {
  if (!bias.defined()) return bias;
  MOH_CHECK(bias.shape() == Shape{channels} && bias.dtype() == x.dtype() && bias.device() == x.device(), op,
            ": expected the bias as [", channels, "] with the dtype and device of the input ", describe(x), ", got ",
            describe(bias));
  return bias.contiguous();
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dParams& params) {
  const ConvGeometry g = check_conv("conv2d", x, weight, params);
  Tensor b = check_bias("conv2d", bias, x, g.o);
  Tensor out = Tensor::empty({g.n, g.o, g.ho, g.wo}, x.dtype(), x.device());
  MOH_BACKEND(x.device(), conv2d_forward, x.contiguous(), weight.contiguous(), b, params, out);
  return out;
}

Conv2dBackward conv2d_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                               const Conv2dParams& params, Conv2dGrads wanted) {
  const char* op = "conv2d_backward";
  const ConvGeometry g = check_conv(op, x, weight, params);
  MOH_CHECK(grad_out.defined() && grad_out.shape() == Shape({g.n, g.o, g.ho, g.wo}) &&
                grad_out.dtype() == x.dtype() && grad_out.device() == x.device(),
            op, ": expected grad_out [", g.n, ", ", g.o, ", ", g.ho, ", ", g.wo, "] like the output of the input ",
            describe(x), ", got ", grad_out.defined() ? describe(grad_out) : std::string("an undefined tensor"));
  Conv2dBackward r;
  if (wanted.input) r.grad_input = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (wanted.weight) r.grad_weight = Tensor::empty(weight.shape(), x.dtype(), x.device());
  if (wanted.bias) r.grad_bias = Tensor::empty({g.o}, x.dtype(), x.device());
  if (!wanted.input && !wanted.weight && !wanted.bias) return r;
  MOH_BACKEND(x.device(), conv2d_backward, grad_out.contiguous(), x.contiguous(), weight.contiguous(), params,
              r.grad_input, r.grad_weight, r.grad_bias);
  return r;
}

}  // namespace moh
