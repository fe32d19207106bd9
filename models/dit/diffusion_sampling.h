// Reverse-process sampling for a GaussianDiffusion (improved-diffusion's p_sample, ddim_sample and
// their loops), without autograd. The denoiser is a callback: given x_t [N, C, ...] and the model
// timesteps [N] (already mapped to base-process steps, GaussianDiffusion::model_timesteps), it
// returns the model output [N, 2C, ...] (eps and variance values); classifier-free guidance, class
// labels and the EMA weights are the callback's business. Noise comes from the Generator passed in,
// so a seed reproduces a sample exactly on any device.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/random.h"
#include "core/tensor.h"
#include "models/dit/diffusion.h"

namespace moh {

using DenoiseFn = std::function<Tensor(const Tensor& x_t, const Tensor& model_t)>;

enum class DiffusionSampler { Ddpm, Ddim };
// "ddpm" or "ddim"; anything else throws naming the accepted names.
DiffusionSampler parse_diffusion_sampler(const std::string& name);

struct SampleStep {
  Tensor sample;       // x_{t-1}
  Tensor pred_xstart;  // the x_0 the model predicts at step t
};

// Ancestral step: x_{t-1} = mean + exp(log_variance / 2) * z, z ~ N(0, I) from gen, and no noise for
// the samples whose t is 0 (they get the mean).
SampleStep p_sample(const GaussianDiffusion& diffusion, const DenoiseFn& model, const Tensor& x, const Tensor& t,
                    Generator& gen, bool clip_denoised);

// DDIM step (eq. 12 of Song et al.): with eps re-derived from the predicted x_0,
// x_{t-1} = x_0 sqrt(ab_prev) + sqrt(1 - ab_prev - sigma^2) eps + sigma z,
// sigma = eta sqrt((1 - ab_prev) / (1 - ab)) sqrt(1 - ab / ab_prev); no noise is drawn when eta
// is 0 (a deterministic map) and none is added where t is 0.
SampleStep ddim_sample(const GaussianDiffusion& diffusion, const DenoiseFn& model, const Tensor& x, const Tensor& t,
                       Generator& gen, bool clip_denoised, double eta = 0.0);

struct SampleLoopOptions {
  DiffusionSampler sampler = DiffusionSampler::Ddpm;
  bool clip_denoised = false;  // DiT samples latents: no clipping
  double eta = 0.0;            // DDIM only, >= 0
};

// Called after each step with (steps done, num_timesteps).
using SampleProgressFn = std::function<void(int64_t done, int64_t total)>;

// Runs every step from num_timesteps - 1 down to 0 starting at x_T (e.g. normal noise drawn by the
// caller) and returns x_0, of x_T's shape, dtype and device.
Tensor sample_loop(const GaussianDiffusion& diffusion, const DenoiseFn& model, const Tensor& x_T, Generator& gen,
                   const SampleLoopOptions& options = {}, const SampleProgressFn& progress = {});

}  // namespace moh
