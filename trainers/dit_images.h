// Images from a trained DiT (moh sample, the DiT task's sample evaluation): sample_dit's latents on the
// process respaced to `steps` (with guidance), divided by the latent scale factor, decoded by the
// autoencoder and centre-cropped; pixels in [-1, 1], [N, C, S, S] on the CPU. Labels are sampled in batches
// of `batch`; batch k draws all its noise from its own Philox stream (seed, offset k * 2^40), and the
// batches are split over dist::world()'s ranks (contiguous runs, as eval_shard) and gathered, so the same
// seed, labels and batch give the same images on every rank and for any number of ranks. Every rank of the
// world must call it together.
#pragma once

#include <cstdint>
#include <functional>

#include "models/autoencoder/autoencoder.h"
#include "models/dit/diffusion.h"
#include "models/dit/guided_sampling.h"

namespace moh {

struct DitImageOptions {
  int64_t steps = 250;  // of the respaced process (at most the trained process's steps)
  SampleLoopOptions loop;
  GuidanceOptions guidance;
  int64_t crop = 0;     // centre crop side (0: the decoded size)
  int64_t batch = 100;  // samples per pass
};

// Called after every reverse step with (samples this rank finished before this batch, step, steps).
using DitImageProgress = std::function<void(int64_t done, int64_t step, int64_t steps)>;

// `base` is the process the model was trained on; moh::Error when the options do not fit the model, the
// autoencoder or the process.
Tensor sample_dit_images(const DiT& model, const DiffusionOptions& base, const Autoencoder& decoder,
                         double scale_factor, const Tensor& labels, const DitImageOptions& options, uint64_t seed,
                         const DitImageProgress& progress = {});

}  // namespace moh
