// Linear: y = x @ W^T + b over the last dim (W [out, in], b [out], PyTorch names `weight`, `bias`),
// computed as one tape node: one GEMM of the flattened [N, in] rows against the transposed weight
// view (no copy of W) with the bias added in place; the backward is two GEMMs and a column sum.
// Also the weight-init choice and the input check shared by the feature-wise layers.
#pragma once

#include <cstdint>
#include <string>

#include "autograd/variable.h"
#include "core/random.h"
#include "layers/module.h"

namespace moh {

// How a projection weight [out, in(, ...)] is initialised; biases always start at zero.
enum class WeightInit {
  XavierUniform,  // U(-a, a), a = sqrt(6 / (fan_in + fan_out)) (timm ViT/DiT/MAE)
  TruncNormal,    // N(0, std) truncated to +-2 std (timm's trunc_normal_(std=0.02))
  Normal,         // N(0, std) (GPT-2 / LLaMA: normal_(std=0.02))
};
void init_weight(const ag::Variable& weight, WeightInit init, double std, Generator& gen);

// Throws naming `layer` ("Linear(in=4, out=3, bias)") unless x is [..., features] of `dtype`.
void check_features(const Module& layer, const ag::Variable& x, int64_t features, DType dtype);
// "Linear(in=4, out=3, bias)": type_name(extra_repr()), for error messages.
std::string layer_label(const Module& layer);

// y = x @ weight^T + bias for x [..., in], weight [out, in], bias [out] or undefined; one tape node.
// Checks only what the GEMM needs (ranks, sizes, dtypes); errors name "linear".
ag::Variable linear(const ag::Variable& x, const ag::Variable& weight, const ag::Variable& bias);

struct LinearOptions {
  int64_t in_features = 0;
  int64_t out_features = 0;
  bool bias = true;
  WeightInit init = WeightInit::XavierUniform;
  double init_std = 0.02;  // TruncNormal and Normal
  DType dtype = DType::Float32;
};

class Linear : public Module {
 public:
  Linear(const LinearOptions& options, Generator& gen);
  std::string type_name() const override { return "Linear"; }
  std::string extra_repr() const override;
  // x [..., in] -> [..., out].
  ag::Variable forward(const ag::Variable& x) const;

  const LinearOptions& options() const { return options_; }
  const ag::Variable& weight() const { return weight_; }
  const ag::Variable& bias() const { return bias_; }  // undefined without bias

 private:
  LinearOptions options_;
  ag::Variable weight_, bias_;
};

}  // namespace moh
