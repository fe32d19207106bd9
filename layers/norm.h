// LayerNorm and RMSNorm over the last dim (PyTorch/HF-LLaMA parameter names `weight`, `bias`) and
// GroupNorm over channel groups of [N, C, ...] inputs (torch.nn.GroupNorm), thin modules over the
// fused ag::layer_norm / ag::rms_norm / ag::group_norm; weights start at one, biases at zero.
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

struct GroupNormOptions {
  int64_t groups = 32;
  int64_t channels = 0;  // groups must divide it
  double eps = 1e-5;
  bool affine = true;  // per-channel weight and bias
  DType dtype = DType::Float32;
};

class GroupNorm : public Module {
 public:
  explicit GroupNorm(const GroupNormOptions& options);
  std::string type_name() const override { return "GroupNorm"; }
  std::string extra_repr() const override;
  // x [N, channels, ...] -> the same shape.
  ag::Variable forward(const ag::Variable& x) const;

  const GroupNormOptions& options() const { return options_; }

 private:
  GroupNormOptions options_;
  ag::Variable weight_, bias_;  // undefined without affine
};

}  // namespace moh
