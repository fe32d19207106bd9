// GaussianDiffusion: a (possibly respaced) Gaussian diffusion process for a model that predicts the
// noise eps and its own variance, as DiT (improved-diffusion's EPSILON mean and LEARNED_RANGE
// variance): the model output [N, 2C, ...] holds eps [N, C, ...] and v [N, C, ...] in [-1, 1], and
// the model's log-variance is frac * log(beta_t) + (1 - frac) * posterior_log_variance_clipped_t
// with frac = (v + 1) / 2.
// Timesteps t are int64 [N] tensors of step indices of this process (0 = the first diffusion step);
// the model is called with model_timesteps(t), the base-process steps it was trained on. The
// float64 tables live on the host; each use gathers one coefficient per sample into a
// [N, 1, ..., 1] tensor of the data's dtype and device. The functions taking Variables record on
// the autograd tape (a training loss backpropagates into the model output).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "models/dit/noise_schedule.h"

namespace moh {

struct DiffusionOptions {
  BetaSchedule schedule = BetaSchedule::Linear;
  int64_t steps = 1000;    // of the base process (the one the model is trained on)
  std::string respacing;   // space_timesteps spec: "" (every step), "250", "ddim50", "10,15,20"
};

// A Gaussian N(mean, exp(log_variance)); variance = exp(log_variance).
struct GaussianMoments {
  ag::Variable mean, variance, log_variance;
};

// The model output split along dim 1: eps and the variance interpolation v.
struct EpsAndVariance {
  ag::Variable eps, var_values;
};
// output [N, 2C, ...] -> {eps, v}, each [N, C, ...] (views; gradients flow back into output).
EpsAndVariance split_model_output(const ag::Variable& output);

// p(x_{t-1} | x_t) and the x_0 it predicts.
struct ReversePrediction {
  GaussianMoments moments;
  ag::Variable pred_xstart;
};

class GaussianDiffusion {
 public:
  // timestep_map: the base step of each step (empty: the identity, this is the base process).
  explicit GaussianDiffusion(std::vector<double> betas, std::vector<int64_t> timestep_map = {});
  // The schedule's betas, respaced when options.respacing is set.
  static GaussianDiffusion create(const DiffusionOptions& options);

  int64_t num_timesteps() const { return tables_.steps(); }
  const DiffusionTables& tables() const { return tables_; }
  const std::vector<int64_t>& timestep_map() const { return timestep_map_; }
  // t [N] of this process -> the base timesteps [N] to give the model (same device).
  Tensor model_timesteps(const Tensor& t) const;

  // table[t_n] for each sample n as a [N, 1, ..., 1] tensor of like's dtype and device and rank.
  Tensor extract(const std::vector<double>& table, const Tensor& t, const Tensor& like) const;

  // q(x_t | x_0): mean sqrt(alphas_cumprod_t) x_0, variance 1 - alphas_cumprod_t.
  GaussianMoments q_mean_variance(const Tensor& x_start, const Tensor& t) const;
  // x_t = sqrt(alphas_cumprod_t) x_0 + sqrt(1 - alphas_cumprod_t) noise.
  Tensor q_sample(const Tensor& x_start, const Tensor& t, const Tensor& noise) const;
  // q(x_{t-1} | x_t, x_0) with the clipped log-variance; x_start may be a prediction on the tape.
  GaussianMoments q_posterior_mean_variance(const ag::Variable& x_start, const Tensor& x_t, const Tensor& t) const;
  // x_0 = sqrt(1 / alphas_cumprod_t) x_t - sqrt(1 / alphas_cumprod_t - 1) eps, and its inverse.
  ag::Variable predict_xstart_from_eps(const Tensor& x_t, const Tensor& t, const ag::Variable& eps) const;
  Tensor predict_eps_from_xstart(const Tensor& x_t, const Tensor& t, const Tensor& pred_xstart) const;
  // p(x_{t-1} | x_t) from the model output at (x_t, t); clip_denoised clamps the predicted x_0 to
  // [-1, 1] before the posterior mean is taken from it.
  ReversePrediction p_mean_variance(const EpsAndVariance& output, const Tensor& x_t, const Tensor& t,
                                  bool clip_denoised) const;

 private:
  std::vector<int64_t> checked_timesteps(const Tensor& t, int64_t batch) const;

  DiffusionTables tables_;
  std::vector<int64_t> timestep_map_;
};

}  // namespace moh
