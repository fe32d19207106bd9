// PatchEmbed (timm/DiT/MAE): images [B, C, H, W] -> tokens [B, N, D], N = (H/p) * (W/p) in row-major
// patch order, each token the projection of its patch's C*p*p values in (c, i, j) order: exactly
// Conv2d(C, D, kernel=stride=p)(x).flatten(2).transpose(1, 2). Parameters are timm's
// `proj.weight` [D, C, p, p] and `proj.bias` [D], so checkpoints load unchanged; the forward
// gathers the patches into [B*N, C*p*p] rows (one copy) and runs one GEMM against the weight
// viewed as [D, C*p*p].
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "autograd/variable.h"
#include "core/random.h"
#include "layers/linear.h"
#include "layers/module.h"

namespace moh {

struct PatchEmbedOptions {
  int64_t img_size = 224;  // square images
  int64_t patch_size = 16;
  int64_t in_chans = 3;
  int64_t embed_dim = 768;
  bool bias = true;
  // true: inputs must be img_size x img_size (timm's default); false: any H, W divisible by p.
  bool strict_img_size = true;
  // Applied to the weight viewed as [D, C*p*p] (what DiT/MAE do); the bias starts at zero.
  WeightInit init = WeightInit::XavierUniform;
  double init_std = 0.02;
  DType dtype = DType::Float32;
};

class PatchEmbed : public Module {
 public:
  PatchEmbed(const PatchEmbedOptions& options, Generator& gen);
  std::string type_name() const override { return "PatchEmbed"; }
  std::string extra_repr() const override;
  // x [B, in_chans, H, W] -> [B, (H/p) * (W/p), embed_dim].
  ag::Variable forward(const ag::Variable& x) const;

  const PatchEmbedOptions& options() const { return options_; }
  int64_t grid_size() const { return options_.img_size / options_.patch_size; }
  int64_t num_patches() const { return grid_size() * grid_size(); }

 private:
  // The `proj` child: a Conv2d-shaped parameter holder (kernel = stride = patch_size).
  class Projection : public Module {
   public:
    Projection(const PatchEmbedOptions& options, Generator& gen);
    std::string type_name() const override { return "PatchProjection"; }
    std::string extra_repr() const override;
    int64_t in_chans, embed_dim, patch_size;
    ag::Variable weight, bias;  // [D, C, p, p], [D] or undefined
  };

  PatchEmbedOptions options_;
  std::shared_ptr<Projection> proj_;
};

}  // namespace moh
