// Feed-forward blocks. Mlp (timm naming): fc1 -> act -> drop1 -> fc2 -> drop2, parameters
// fc1.{weight,bias}, fc2.{weight,bias}. SwiGLU (LLaMA naming, no biases by default):
// y = w2(silu(w1 x) * w3 x) with w1 the gate, w3 the up and w2 the down projection.
// hidden/out sizes of 0 mean "the input size" (timm's defaults).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "autograd/variable.h"
#include "core/random.h"
#include "layers/dropout.h"
#include "layers/linear.h"
#include "layers/module.h"

namespace moh {

enum class Activation {
  Gelu,      // exact (erf) GELU, nn.GELU()
  GeluTanh,  // nn.GELU(approximate="tanh") (DiT)
  Silu,
  Relu,
};
const char* activation_name(Activation act);
ag::Variable activate(const ag::Variable& x, Activation act);

struct MlpOptions {
  int64_t in_features = 0;
  int64_t hidden_features = 0;  // 0: in_features
  int64_t out_features = 0;     // 0: in_features
  Activation act = Activation::Gelu;
  double drop = 0.0;  // dropout after the activation and after fc2
  bool bias = true;
  WeightInit init = WeightInit::XavierUniform;
  double init_std = 0.02;
  DType dtype = DType::Float32;
};

class Mlp : public Module {
 public:
  // dropout_gen is needed only when drop > 0 (see layers/dropout.h).
  Mlp(const MlpOptions& options, Generator& gen, std::shared_ptr<Generator> dropout_gen = nullptr);
  std::string type_name() const override { return "Mlp"; }
  std::string extra_repr() const override;
  // x [..., in] -> [..., out].
  ag::Variable forward(const ag::Variable& x) const;

  const MlpOptions& options() const { return options_; }
  std::shared_ptr<Linear> fc1, fc2;
  std::shared_ptr<Dropout> drop1, drop2;

 private:
  MlpOptions options_;
};

struct SwiGLUOptions {
  int64_t in_features = 0;
  int64_t hidden_features = 0;  // 0: in_features
  int64_t out_features = 0;     // 0: in_features
  bool bias = false;
  WeightInit init = WeightInit::XavierUniform;
  double init_std = 0.02;
  DType dtype = DType::Float32;
};

class SwiGLU : public Module {
 public:
  SwiGLU(const SwiGLUOptions& options, Generator& gen);
  std::string type_name() const override { return "SwiGLU"; }
  std::string extra_repr() const override;
  // x [..., in] -> [..., out].
  ag::Variable forward(const ag::Variable& x) const;

  const SwiGLUOptions& options() const { return options_; }
  std::shared_ptr<Linear> w1, w2, w3;  // gate [hidden, in], down [out, hidden], up [hidden, in]

 private:
  SwiGLUOptions options_;
};

}  // namespace moh
