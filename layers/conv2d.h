// Conv2d: torch.nn.Conv2d over NCHW inputs (parameters `weight` [out, in / groups, k, k] and `bias`
// [out], PyTorch's names and layout, so state dicts load unchanged), a thin module over ag::conv2d.
// Square kernels, one stride, padding and dilation for both axes. Initialisation is PyTorch's
// default (kaiming_uniform(a=sqrt(5)) on the weight, which is U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
// and the same bound for the bias) or zeros (for the output convolutions that start a residual
// branch at zero).
#pragma once

#include <cstdint>
#include <string>

#include "autograd/variable.h"
#include "core/random.h"
#include "layers/module.h"

namespace moh {

struct Conv2dOptions {
  enum class Init { TorchDefault, Zeros };

  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t kernel_size = 3;
  int64_t stride = 1;
  int64_t padding = 0;  // zeros on every side
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  Init init = Init::TorchDefault;
  DType dtype = DType::Float32;
};

class Conv2d : public Module {
 public:
  Conv2d(const Conv2dOptions& options, Generator& gen);
  std::string type_name() const override { return "Conv2d"; }
  std::string extra_repr() const override;
  // x [N, in_channels, H, W] of the layer's dtype -> [N, out_channels, HO, WO].
  ag::Variable forward(const ag::Variable& x) const;

  const Conv2dOptions& options() const { return options_; }
  const ag::Variable& weight() const { return weight_; }
  const ag::Variable& bias() const { return bias_; }  // undefined without bias

 private:
  Conv2dOptions options_;
  ag::Variable weight_, bias_;
};

}  // namespace moh
