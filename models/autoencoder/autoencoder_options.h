// AutoencoderOptions: the sizes of the KL autoencoder (the Stable-Diffusion VAE's `ddconfig` names:
// ch, ch_mult, num_res_blocks, z_channels, attention in the middle block) and its named presets.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace moh {

struct AutoencoderOptions {
  int64_t in_channels = 3;     // image channels (the decoder outputs as many)
  int64_t base_channels = 128;  // ch: channels of the first level
  std::vector<int64_t> channel_mult{1, 2, 4, 4};  // ch_mult: level i has base_channels * channel_mult[i]
  int64_t res_blocks = 2;      // num_res_blocks per level (the decoder has one more per level)
  int64_t latent_channels = 4;  // z_channels
  bool mid_attention = true;   // AttnBlock between the two middle ResnetBlocks
  int64_t norm_groups = 32;    // must divide every level's channel count
  DType dtype = DType::Float32;

  int64_t levels() const { return int64_t(channel_mult.size()); }
  // f: images of side S give latents of side S / f (one 2x down-sampling between levels).
  int64_t downsample_factor() const { return int64_t(1) << (levels() - 1); }
  // Throws naming the field unless the sizes make a model.
  void validate() const;
};

// Named sizes (the caller may change any field afterwards):
//  fmnist  1 channel, ch 16, ch_mult [1, 2, 4] (f = 4: 32 x 32 images -> 4 x 8 x 8 latents), one
//          ResnetBlock per level, mid attention, 8 norm groups (681,333 parameters)
//  sd      the Stable-Diffusion v1 VAE (kl-f8): 3 channels, ch 128, ch_mult [1, 2, 4, 4], two ResnetBlocks
//          per level, mid attention, 32 groups, 4 latent channels (83,653,863 parameters)
// An unknown name throws listing the known ones.
AutoencoderOptions autoencoder_preset(const std::string& name);

}  // namespace moh
