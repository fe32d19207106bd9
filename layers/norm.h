// LayerNorm and RMSNorm over the last dim (PyTorch/HF-LLaMA parameter names `weight`, `bias`),
// thin modules over the fused ag::layer_norm / ag::rms_norm; weights start at one, biases at zero.
#pragma once

#include <cstdint>
#include <string>

#include "autograd/variable.h"
#include "layers/module.h"

namespace moh {

struct LayerNormOptions {
  int64_t dim = 0;
  double eps = 1e-5;
  bool affine = true;  // learnable weight and bias (PyTorch's elementwise_affine)
  DType dtype = DType::Float32;
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(const LayerNormOptions& options);
  std::string type_name() const override { return "LayerNorm"; }
  std::string extra_repr() const override;
  // x [..., dim] -> [..., dim].
  ag::Variable forward(const ag::Variable& x) const;

  const LayerNormOptions& options() const { return options_; }

 private:
  LayerNormOptions options_;
  ag::Variable weight_, bias_;  // undefined without affine
};

struct RMSNormOptions {
  int64_t dim = 0;
  double eps = 1e-6;
  DType dtype = DType::Float32;
};

// y = x / sqrt(mean(x^2) + eps) * weight (LLaMA's RMSNorm).
class RMSNorm : public Module {
 public:
  explicit RMSNorm(const RMSNormOptions& options);
  std::string type_name() const override { return "RMSNorm"; }
  std::string extra_repr() const override;
  // x [..., dim] -> [..., dim].
  ag::Variable forward(const ag::Variable& x) const;

  const RMSNormOptions& options() const { return options_; }

 private:
  RMSNormOptions options_;
  ag::Variable weight_;
};

}  // namespace moh
