// The building blocks of the latent autoencoder, in the layout and parameter names of the
// Stable-Diffusion VAE (CompVis latent-diffusion `ldm.modules.diffusionmodules.model`), so its state
// dicts load by name:
//  ResnetBlock  x + conv2(silu(norm2(conv1(silu(norm1(x)))))), with a 1x1 `nin_shortcut` on x when the
//               channel count changes; norm = GroupNorm(groups, C, eps 1e-6).
//  AttnBlock    x + proj_out(attention(q, k, v)) over the H*W positions, one head of width C, with q, k,
//               v, proj_out 1x1 convolutions of norm(x).
//  Downsample   zero padding of one row and column at the bottom and right, then a 3x3 stride-2 `conv`.
//  Upsample     nearest-neighbour x2, then a 3x3 `conv`.
// Every block takes and returns NCHW tensors of its dtype.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "autograd/variable.h"
#include "core/random.h"
#include "layers/conv2d.h"
#include "layers/module.h"
#include "layers/norm.h"

namespace moh {

struct AutoencoderBlockOptions {
  int64_t norm_groups = 32;
  DType dtype = DType::Float32;
};

class ResnetBlock : public Module {
 public:
  ResnetBlock(int64_t in_channels, int64_t out_channels, const AutoencoderBlockOptions& options, Generator& gen);
  std::string type_name() const override { return "ResnetBlock"; }
  ag::Variable forward(const ag::Variable& x) const;

  std::shared_ptr<GroupNorm> norm1, norm2;
  std::shared_ptr<Conv2d> conv1, conv2;
  std::shared_ptr<Conv2d> nin_shortcut;  // null when in_channels == out_channels
};

class AttnBlock : public Module {
 public:
  AttnBlock(int64_t channels, const AutoencoderBlockOptions& options, Generator& gen);
  std::string type_name() const override { return "AttnBlock"; }
  ag::Variable forward(const ag::Variable& x) const;

  std::shared_ptr<GroupNorm> norm;
  std::shared_ptr<Conv2d> q, k, v, proj_out;
};

class Downsample : public Module {
 public:
  Downsample(int64_t channels, DType dtype, Generator& gen);
  std::string type_name() const override { return "Downsample"; }
  // [N, C, H, W] -> [N, C, H / 2, W / 2] (H and W even).
  ag::Variable forward(const ag::Variable& x) const;

  std::shared_ptr<Conv2d> conv;
};

class Upsample : public Module {
 public:
  Upsample(int64_t channels, DType dtype, Generator& gen);
  std::string type_name() const override { return "Upsample"; }
  // [N, C, H, W] -> [N, C, 2H, 2W].
  ag::Variable forward(const ag::Variable& x) const;

  std::shared_ptr<Conv2d> conv;
};

// GroupNorm(groups, channels, eps 1e-6) with affine parameters, the VAE's `Normalize`.
std::shared_ptr<GroupNorm> make_vae_norm(int64_t channels, const AutoencoderBlockOptions& options);
// A 3x3 (padding 1) or 1x1 convolution with PyTorch's default initialisation.
std::shared_ptr<Conv2d> make_vae_conv(int64_t in_channels, int64_t out_channels, int64_t kernel, DType dtype,
                                      Generator& gen);

}  // namespace moh
