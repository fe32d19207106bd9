// Encoder and Decoder of the KL autoencoder, with the Stable-Diffusion VAE's module tree and names:
//  Encoder  conv_in -> down.<i>.block.<j> (ResnetBlocks), down.<i>.downsample (all but the last level)
//           -> mid.block_1, mid.attn_1, mid.block_2 -> norm_out, silu, conv_out (2 * latent channels:
//           the posterior's mean and log-variance)
//  Decoder  conv_in -> mid -> up.<i>.block.<j> (res_blocks + 1 per level, run from the last level to
//           the first), up.<i>.upsample (all but level 0) -> norm_out, silu, conv_out (image channels)
// Level i has base_channels * channel_mult[i] channels.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "core/random.h"
#include "layers/conv2d.h"
#include "layers/module.h"
#include "layers/norm.h"
#include "models/autoencoder/autoencoder_options.h"
#include "models/autoencoder/blocks.h"

namespace moh {

// One resolution level of the encoder (`down.<i>`) or decoder (`up.<i>`): its ResnetBlocks and the
// resampling to the next level (null at the last level).
struct CoderLevel {
  std::vector<std::shared_ptr<ResnetBlock>> blocks;
  std::shared_ptr<Downsample> downsample;
  std::shared_ptr<Upsample> upsample;
};

// mid.block_1, mid.attn_1 (optional), mid.block_2 at the lowest resolution.
class MidBlock : public Module {
 public:
  MidBlock(int64_t channels, bool attention, const AutoencoderBlockOptions& options, Generator& gen);
  std::string type_name() const override { return "MidBlock"; }
  ag::Variable forward(const ag::Variable& x) const;

  std::shared_ptr<ResnetBlock> block_1, block_2;
  std::shared_ptr<AttnBlock> attn_1;  // null without mid attention
};

class Encoder : public Module {
 public:
  Encoder(const AutoencoderOptions& options, Generator& gen);
  std::string type_name() const override { return "Encoder"; }
  // images [N, in_channels, S, S] (S a multiple of the downsample factor) -> [N, 2 * latent_channels, S/f, S/f].
  ag::Variable forward(const ag::Variable& images) const;

 private:
  std::shared_ptr<Conv2d> conv_in_, conv_out_;
  std::vector<CoderLevel> levels_;
  std::shared_ptr<MidBlock> mid_;
  std::shared_ptr<GroupNorm> norm_out_;
};

class Decoder : public Module {
 public:
  Decoder(const AutoencoderOptions& options, Generator& gen);
  std::string type_name() const override { return "Decoder"; }
  // latents [N, latent_channels, h, w] -> images [N, in_channels, h * f, w * f].
  ag::Variable forward(const ag::Variable& latents) const;

 private:
  std::shared_ptr<Conv2d> conv_in_, conv_out_;
  std::vector<CoderLevel> levels_;  // by level index (0 = full resolution)
  std::shared_ptr<MidBlock> mid_;
  std::shared_ptr<GroupNorm> norm_out_;
};

}  // namespace moh
