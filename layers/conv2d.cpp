// Conv2d module: option checks, PyTorch-default initialisation, input checks naming the layer.
#include "layers/conv2d.h"

#include <cmath>

#include "autograd/conv_fns.h"
#include "core/factory.h"
#include "layers/init.h"
#include "layers/linear.h"

namespace moh {

Conv2d::Conv2d(const Conv2dOptions& o, Generator& gen) : options_(o) {
  MOH_CHECK(o.in_channels > 0 && o.out_channels > 0 && o.kernel_size > 0 && o.stride > 0 && o.padding >= 0 &&
                o.dilation > 0 && o.groups > 0,
            "Conv2d: channels, kernel_size, stride, dilation and groups must be positive and padding >= 0, got ",
            extra_repr());
  MOH_CHECK(o.in_channels % o.groups == 0 && o.out_channels % o.groups == 0, "Conv2d: groups ", o.groups,
            " must divide in_channels ", o.in_channels, " and out_channels ", o.out_channels);
  const int64_t fan_in = o.in_channels / o.groups * o.kernel_size * o.kernel_size;
  weight_ = register_parameter(
      "weight", zeros({o.out_channels, o.in_channels / o.groups, o.kernel_size, o.kernel_size}, o.dtype));
  if (o.bias) bias_ = register_parameter("bias", zeros({o.out_channels}, o.dtype));
  if (o.init == Conv2dOptions::Init::TorchDefault) {
    const double bound = 1.0 / std::sqrt(double(fan_in));
    init::uniform(weight_, gen, -bound, bound);
    if (o.bias) init::uniform(bias_, gen, -bound, bound);
  }
}

std::string Conv2d::extra_repr() const {
  const Conv2dOptions& o = options_;
  std::string s = str_cat(o.in_channels, ", ", o.out_channels, ", kernel_size=", o.kernel_size);
  if (o.stride != 1) s += str_cat(", stride=", o.stride);
  if (o.padding != 0) s += str_cat(", padding=", o.padding);
  if (o.dilation != 1) s += str_cat(", dilation=", o.dilation);
  if (o.groups != 1) s += str_cat(", groups=", o.groups);
  if (!o.bias) s += ", bias=False";
  return s;
}

ag::Variable Conv2d::forward(const ag::Variable& x) const {
  MOH_CHECK(x.defined(), layer_label(*this), ": the input is undefined");
  MOH_CHECK(x.dim() == 4 && x.size(1) == options_.in_channels, layer_label(*this), ": expected an input [N, ",
            options_.in_channels, ", H, W], got ", x.describe());
  MOH_CHECK(x.dtype() == options_.dtype, layer_label(*this), ": input ", x.describe(), " does not match the layer's ",
            dtype_name(options_.dtype), " parameters");
  Conv2dParams p;
  p.stride_h = p.stride_w = options_.stride;
  p.pad_h = p.pad_w = options_.padding;
  p.dilation_h = p.dilation_w = options_.dilation;
  p.groups = options_.groups;
  return ag::conv2d(x, weight_, bias_, p);
}

}  // namespace moh
