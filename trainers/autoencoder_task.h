// The `autoencoder` task family: the KL autoencoder of latent diffusion (models/autoencoder) trained
// to reconstruct images (Fashion-MNIST or an image folder, pixels in [-1, 1]) with an L1 or L2 loss
// plus beta * KL. Fashion-MNIST's 28 x 28 images are padded with black to data.pad_to (32 by default)
// so that 4x down-sampling gives 8 x 8 latents, which DiT's patch size 2 tiles. Evaluation reports
// the loss terms, MSE and PSNR of the mean reconstruction on the held-out split (measured on the
// original image area, not the padding) and writes a grid of originals above their reconstructions.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "models/autoencoder/autoencoder.h"
#include "trainers/task.h"

namespace moh {

TaskFamily autoencoder_task_family();

// The model a validated autoencoder config describes for images of `channels` channels (preset, then the
// model.* overrides); ConfigErrors name the key. Used by the task and by `moh encode` / `moh decode`.
AutoencoderOptions autoencoder_options_from_config(const Config& cfg, int64_t channels);

// Black in the task's [-1, 1] pixel range: the padding, and the empty tiles of grids.
inline constexpr double kBlackPixel = -1.0;

// Images [N, C, S, S] padded on every side with black to [N, C, side, side] (side >= S, side - S even),
// or returned unchanged when side is 0 or S. Throws naming data.pad_to otherwise.
Tensor pad_images(const Tensor& images, int64_t side);

}  // namespace moh
