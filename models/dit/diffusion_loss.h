// The DiT training loss for an eps-and-variance model output (improved-diffusion's
// training_losses with LossType.MSE or RESCALED_MSE and LEARNED_RANGE variance):
//   mse = mean over non-batch dims of (noise - eps)^2
//   vb  = the variational-bound term of step t in bits per dim, computed with the model's mean
//         DETACHED (the reference's frozen_out), so it trains only the variance half of the output:
//         KL(q(x_{t-1} | x_t, x_0) || p(x_{t-1} | x_t)) for t > 0, the decoder NLL
//         -log p(x_0 | x_1) under the discretised Gaussian at t == 0; no clipping of x_0.
//   loss = mse + vb (RescaledMse: mse + vb * num_timesteps / 1000).
// DiT trains with LossType.MSE (create_diffusion's rescale_learned_sigmas=False): loss = mse + vb.
// All per sample ([N]) in x_start's dtype; the model output is cast to it when it differs.
#pragma once

#include <cstdint>

#include "autograd/variable.h"
#include "core/random.h"
#include "models/dit/diffusion.h"

namespace moh {

enum class DiffusionLossType { Mse, RescaledMse };

struct DiffusionLosses {
  ag::Variable loss, mse, vb;  // [N] each
};

// model_output [N, 2C, ...] is the model's prediction at (x_t, t), x_t = q_sample(x_start, t, noise).
DiffusionLosses training_losses(const GaussianDiffusion& diffusion, const ag::Variable& model_output,
                                const Tensor& x_start, const Tensor& x_t, const Tensor& t, const Tensor& noise,
                                DiffusionLossType type = DiffusionLossType::Mse);

// The variational-bound term of step t [N] in bits per dim for the model output's p(x_{t-1} | x_t)
// (the reference's _vb_terms_bpd output): the KL for t > 0, the decoder NLL for t == 0.
ag::Variable vb_terms_bpd(const GaussianDiffusion& diffusion, const EpsAndVariance& output, const Tensor& x_start,
                          const Tensor& x_t, const Tensor& t, bool clip_denoised);

// batch timesteps drawn uniformly from [0, num_timesteps) (the reference's UniformSampler), int64 [batch].
Tensor uniform_timesteps(int64_t batch, int64_t num_timesteps, Generator& gen, Device device = Device::cpu());

}  // namespace moh
