// GaussianDiffusion: coefficient gathers, q(x_t | x_0), the posterior and p(x_{t-1} | x_t) (see diffusion.h).
#include "models/dit/diffusion.h"

#include "autograd/autograd.h"
#include "core/error.h"
#include "core/factory.h"
#include "models/dit/respacing.h"

namespace moh {
namespace {

ag::Variable constant(Tensor t) { return ag::Variable(std::move(t)); }

}  // namespace

EpsAndVariance split_model_output(const ag::Variable& output) {
  MOH_CHECK(output.defined() && output.dim() >= 2 && output.size(1) % 2 == 0 && output.size(1) > 0,
            "diffusion: the model output must be [N, 2C, ...] (eps and the variance values), got ",
            output.defined() ? output.describe() : "undefined");
  std::vector<ag::Variable> halves = ag::split(output, output.size(1) / 2, 1);
  return {halves[0], halves[1]};
}

GaussianDiffusion::GaussianDiffusion(std::vector<double> betas, std::vector<int64_t> timestep_map)
    : tables_(std::move(betas)), timestep_map_(std::move(timestep_map)) {
  if (timestep_map_.empty())
    for (int64_t t = 0; t < tables_.steps(); ++t) timestep_map_.push_back(t);
  MOH_CHECK(int64_t(timestep_map_.size()) == tables_.steps(), "diffusion: the timestep map has ",
            timestep_map_.size(), " entries for ", tables_.steps(), " steps");
}

GaussianDiffusion GaussianDiffusion::create(const DiffusionOptions& options) {
  std::vector<double> betas = make_betas(options.schedule, options.steps);
  if (options.respacing.empty()) return GaussianDiffusion(std::move(betas));
  const DiffusionTables base(std::move(betas));
  RespacedProcess respaced = respace(base.alphas_cumprod, space_timesteps(options.steps, options.respacing));
  return GaussianDiffusion(std::move(respaced.betas), std::move(respaced.timestep_map));
}

std::vector<int64_t> GaussianDiffusion::checked_timesteps(const Tensor& t, int64_t batch) const {
  MOH_CHECK(t.defined() && t.dtype() == DType::Int64 && t.dim() == 1 && t.size(0) == batch,
            "diffusion: timesteps must be int64 [", batch, "] (one per sample), got ",
            t.defined() ? describe(t) : "undefined");
  std::vector<int64_t> steps = t.to_vector<int64_t>();
  for (size_t n = 0; n < steps.size(); ++n)
    MOH_CHECK(steps[n] >= 0 && steps[n] < num_timesteps(), "diffusion: timestep ", steps[n], " of sample ", n,
              " is outside [0, ", num_timesteps(), ")");
  return steps;
}

Tensor GaussianDiffusion::model_timesteps(const Tensor& t) const {
  MOH_CHECK(t.defined() && t.dim() == 1, "diffusion: timesteps must be int64 [N], got ",
            t.defined() ? describe(t) : "undefined");
  std::vector<int64_t> mapped;
  for (int64_t step : checked_timesteps(t, t.size(0))) mapped.push_back(timestep_map_[size_t(step)]);
  return from_vector<int64_t>(mapped, {t.size(0)}, DType::Int64, t.device());
}

Tensor GaussianDiffusion::extract(const std::vector<double>& table, const Tensor& t, const Tensor& like) const {
  MOH_CHECK(like.dim() >= 1, "diffusion: data must be [N, ...], got ", describe(like));
  std::vector<double> values;
  for (int64_t step : checked_timesteps(t, like.size(0))) values.push_back(table[size_t(step)]);
  Shape shape(size_t(like.dim()), 1);
  shape[0] = like.size(0);
  return from_vector<double>(values, shape, like.dtype(), like.device());
}

GaussianMoments GaussianDiffusion::q_mean_variance(const Tensor& x_start, const Tensor& t) const {
  const Tensor log_variance = extract(tables_.log_one_minus_alphas_cumprod, t, x_start);
  return {constant(mul(extract(tables_.sqrt_alphas_cumprod, t, x_start), x_start)), constant(exp(log_variance)),
          constant(log_variance)};
}

Tensor GaussianDiffusion::q_sample(const Tensor& x_start, const Tensor& t, const Tensor& noise) const {
  MOH_CHECK(noise.shape() == x_start.shape(), "diffusion: q_sample: noise ", describe(noise),
            " must have the shape of x_start ", describe(x_start));
  return add(mul(extract(tables_.sqrt_alphas_cumprod, t, x_start), x_start),
             mul(extract(tables_.sqrt_one_minus_alphas_cumprod, t, x_start), noise));
}

GaussianMoments GaussianDiffusion::q_posterior_mean_variance(const ag::Variable& x_start, const Tensor& x_t,
                                                             const Tensor& t) const {
  MOH_CHECK(x_start.shape() == x_t.shape(), "diffusion: q_posterior: x_start ", x_start.describe(),
            " and x_t ", describe(x_t), " must have one shape");
  const ag::Variable mean = constant(extract(tables_.posterior_mean_coef1, t, x_t)) * x_start +
                            constant(mul(extract(tables_.posterior_mean_coef2, t, x_t), x_t));
  return {mean, constant(extract(tables_.posterior_variance, t, x_t)),
          constant(extract(tables_.posterior_log_variance_clipped, t, x_t))};
}

ag::Variable GaussianDiffusion::predict_xstart_from_eps(const Tensor& x_t, const Tensor& t,
                                                        const ag::Variable& eps) const {
  MOH_CHECK(eps.shape() == x_t.shape(), "diffusion: eps ", eps.describe(), " must have the shape of x_t ",
            describe(x_t));
  return constant(mul(extract(tables_.sqrt_recip_alphas_cumprod, t, x_t), x_t)) -
         constant(extract(tables_.sqrt_recipm1_alphas_cumprod, t, x_t)) * eps;
}

Tensor GaussianDiffusion::predict_eps_from_xstart(const Tensor& x_t, const Tensor& t, const Tensor& pred_xstart) const {
  return div(sub(mul(extract(tables_.sqrt_recip_alphas_cumprod, t, x_t), x_t), pred_xstart),
             extract(tables_.sqrt_recipm1_alphas_cumprod, t, x_t));
}

ReversePrediction GaussianDiffusion::p_mean_variance(const EpsAndVariance& output, const Tensor& x_t, const Tensor& t,
                                                   bool clip_denoised) const {
  MOH_CHECK(output.var_values.shape() == x_t.shape(), "diffusion: the model's variance values ",
            output.var_values.describe(), " must have the shape of x_t ", describe(x_t));
  const ag::Variable min_log = constant(extract(tables_.posterior_log_variance_clipped, t, x_t));
  const ag::Variable max_log = constant(extract(tables_.log_betas, t, x_t));
  const ag::Variable frac = (output.var_values + 1.0) * 0.5;
  const ag::Variable log_variance = frac * max_log + (1.0 - frac) * min_log;
  ag::Variable pred_xstart = predict_xstart_from_eps(x_t, t, output.eps);
  if (clip_denoised) pred_xstart = ag::clamp(pred_xstart, -1.0, 1.0);
  return {{q_posterior_mean_variance(pred_xstart, x_t, t).mean, ag::exp(log_variance), log_variance}, pred_xstart};
}

}  // namespace moh
