// The noise schedule of a Gaussian diffusion process and every table derived from it, on the host in
// float64 (as improved-diffusion / DiT's gaussian_diffusion.py): the betas (linear, Ho et al. scaled
// to any step count, or cosine, Nichol & Dhariwal), the cumulative products of alpha = 1 - beta and
// the coefficients of q(x_t | x_0) and of the posterior q(x_{t-1} | x_t, x_0). Step t = 0 is the
// first diffusion step (the reference's convention); every table has one entry per step.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace moh {

enum class BetaSchedule { Linear, Cosine };

// "linear" or "cosine"; anything else throws (moh::Error) naming the accepted names.
BetaSchedule parse_beta_schedule(const std::string& name);
std::string beta_schedule_name(BetaSchedule schedule);

// Linear: evenly spaced from 1e-4 * 1000 / steps to 0.02 * 1000 / steps (numpy.linspace).
// Cosine: betas_for_alpha_bar of alpha_bar(s) = cos((s + 0.008) / 1.008 * pi / 2)^2, capped at 0.999.
std::vector<double> make_betas(BetaSchedule schedule, int64_t steps);

// beta_i = min(1 - alpha_bar((i + 1) / steps) / alpha_bar(i / steps), max_beta) for i in [0, steps).
std::vector<double> betas_for_alpha_bar(int64_t steps, const std::function<double(double)>& alpha_bar,
                                        double max_beta = 0.999);

// The tables of a process with these betas (each in (0, 1]; at least two steps, since the clipped
// posterior log-variance of step 0 borrows step 1's value).
struct DiffusionTables {
  explicit DiffusionTables(std::vector<double> betas);

  int64_t steps() const { return int64_t(betas.size()); }

  std::vector<double> betas;
  std::vector<double> log_betas;
  std::vector<double> alphas_cumprod;       // prod_{s <= t} (1 - beta_s)
  std::vector<double> alphas_cumprod_prev;  // alphas_cumprod[t - 1], 1 at t = 0
  std::vector<double> sqrt_alphas_cumprod;
  std::vector<double> sqrt_one_minus_alphas_cumprod;
  std::vector<double> log_one_minus_alphas_cumprod;
  std::vector<double> sqrt_recip_alphas_cumprod;    // sqrt(1 / alphas_cumprod)
  std::vector<double> sqrt_recipm1_alphas_cumprod;  // sqrt(1 / alphas_cumprod - 1)
  // q(x_{t-1} | x_t, x_0) = N(coef1 * x_0 + coef2 * x_t, posterior_variance).
  std::vector<double> posterior_variance;  // beta_t (1 - alphas_cumprod_prev) / (1 - alphas_cumprod); 0 at t = 0
  std::vector<double> posterior_log_variance_clipped;  // log of it, step 1's value at t = 0
  std::vector<double> posterior_mean_coef1;  // beta_t sqrt(alphas_cumprod_prev) / (1 - alphas_cumprod)
  std::vector<double> posterior_mean_coef2;  // (1 - alphas_cumprod_prev) sqrt(alpha_t) / (1 - alphas_cumprod)
};

}  // namespace moh
