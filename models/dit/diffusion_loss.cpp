// training_losses, vb_terms_bpd and uniform_timesteps (see diffusion_loss.h).
#include "models/dit/diffusion_loss.h"

#include <cmath>
#include <numeric>

#include "autograd/autograd.h"
#include "core/error.h"
#include "core/factory.h"
#include "models/dit/gaussian_likelihood.h"

namespace moh {
namespace {

// The mean over every dim but the batch dim: [N, ...] -> [N].
ag::Variable mean_flat(const ag::Variable& x) {
  std::vector<int64_t> dims(size_t(x.dim() - 1));
  std::iota(dims.begin(), dims.end(), int64_t(1));
  return ag::mean(x, dims);
}

}  // namespace

ag::Variable vb_terms_bpd(const GaussianDiffusion& diffusion, const EpsAndVariance& output, const Tensor& x_start,
                          const Tensor& x_t, const Tensor& t, bool clip_denoised) {
  const GaussianMoments truth = diffusion.q_posterior_mean_variance(ag::Variable(x_start), x_t, t);
  const GaussianMoments model = diffusion.p_mean_variance(output, x_t, t, clip_denoised).moments;
  const double bits = std::log(2.0);
  const ag::Variable kl = mean_flat(normal_kl(truth.mean, truth.log_variance, model.mean, model.log_variance)) / bits;
  const ag::Variable decoder_nll =
      mean_flat(-discretized_gaussian_log_likelihood(x_start, model.mean, model.log_variance * 0.5)) / bits;
  return ag::where(eq(t.to(x_start.device()), 0.0), decoder_nll, kl);
}

DiffusionLosses training_losses(const GaussianDiffusion& diffusion, const ag::Variable& model_output,
                                const Tensor& x_start, const Tensor& x_t, const Tensor& t, const Tensor& noise,
                                DiffusionLossType type) {
  MOH_CHECK(x_start.dim() >= 2 && x_t.shape() == x_start.shape() && noise.shape() == x_start.shape(),
            "diffusion: training_losses: x_start ", describe(x_start), ", x_t ", describe(x_t), " and noise ",
            describe(noise), " must share one [N, C, ...] shape");
  const EpsAndVariance output = split_model_output(ag::to(model_output, x_start.dtype()));
  MOH_CHECK(output.eps.shape() == x_start.shape(), "diffusion: training_losses: the model output ",
            model_output.describe(), " must be [N, 2C, ...] for data ", describe(x_start));
  // The bound trains the variance only: the mean it sees is the detached eps.
  ag::Variable vb = vb_terms_bpd(diffusion, {output.eps.detach(), output.var_values}, x_start, x_t, t, false);
  if (type == DiffusionLossType::RescaledMse) vb = vb * (double(diffusion.num_timesteps()) / 1000.0);
  const ag::Variable residual = ag::Variable(noise) - output.eps;
  const ag::Variable mse = mean_flat(residual * residual);
  return {mse + vb, mse, vb};
}

Tensor uniform_timesteps(int64_t batch, int64_t num_timesteps, Generator& gen, Device device) {
  MOH_CHECK(batch >= 0 && num_timesteps >= 1, "diffusion: uniform_timesteps needs batch >= 0 and >= 1 step, got ",
            batch, " and ", num_timesteps);
  const std::vector<double> u = uniform({batch}, 0.0, 1.0, gen, DType::Float64).to_vector<double>();
  std::vector<int64_t> steps(u.size());
  for (size_t n = 0; n < u.size(); ++n)
    steps[n] = std::min(num_timesteps - 1, int64_t(std::floor(u[n] * double(num_timesteps))));
  return from_vector<int64_t>(steps, {batch}, DType::Int64, device);
}

}  // namespace moh
