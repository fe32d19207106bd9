// Sampling a class-conditional DiT: x_T ~ N(0, I) drawn from the generator, then the reverse process of a
// (usually respaced) GaussianDiffusion with the DiT as denoiser, with classifier-free guidance when the
// scale is not 1 (DiT's sample.py: the batch is doubled with the null class, forward_with_cfg combines
// the halves, the conditional half is returned). The result lives in the model's latent space
// (unit-variance latents: divide by the latent scale factor before decoding). The model should be in
// eval mode; no tape is recorded. A seed reproduces the samples exactly for the same labels and batch.
#pragma once

#include <cstdint>

#include "core/random.h"
#include "models/dit/diffusion.h"
#include "models/dit/diffusion_sampling.h"
#include "models/dit/dit.h"

namespace moh {

struct GuidanceOptions {
  double scale = 1.0;    // 1: plain conditional sampling; DiT's sample.py uses 4.0, its FID runs 1.5
  int64_t channels = 0;  // guided latent channels (0: all; 3: the reference code's behaviour)
};

// labels int64 [N] in [0, num_classes); returns [N, in_channels, input_size, input_size] of the model's
// dtype and device.
Tensor sample_dit(const DiT& model, const GaussianDiffusion& diffusion, const Tensor& labels,
                  const GuidanceOptions& guidance, const SampleLoopOptions& loop, Generator& gen,
                  const SampleProgressFn& progress = {});

}  // namespace moh
