// p_sample, ddim_sample and sample_loop (see diffusion_sampling.h).
#include "models/dit/diffusion_sampling.h"

#include <cmath>

#include "autograd/autograd.h"
#include "core/error.h"
#include "core/factory.h"

namespace moh {
namespace {

ReversePrediction predict(const GaussianDiffusion& diffusion, const DenoiseFn& model, const Tensor& x, const Tensor& t,
                        bool clip_denoised) {
  const Tensor output = model(x, diffusion.model_timesteps(t));
  MOH_CHECK(output.defined() && output.dim() == x.dim() && output.size(0) == x.size(0) &&
                output.size(1) == 2 * x.size(1),
            "diffusion: the denoiser returned ", output.defined() ? describe(output) : "undefined",
            " for x_t ", describe(x), ", expected [N, 2C, ...] (eps and the variance values)");
  return diffusion.p_mean_variance(split_model_output(ag::Variable(output.to(x.dtype()))), x, t, clip_denoised);
}

// 1 for the samples whose t is not 0, else 0, as [N, 1, ..., 1] of x's dtype.
Tensor nonzero_mask(const GaussianDiffusion& diffusion, const Tensor& t, const Tensor& x) {
  std::vector<double> ones(diffusion.tables().betas.size(), 1.0);
  ones[0] = 0.0;
  return diffusion.extract(ones, t, x);
}

}  // namespace

DiffusionSampler parse_diffusion_sampler(const std::string& name) {
  if (name == "ddpm") return DiffusionSampler::Ddpm;
  if (name == "ddim") return DiffusionSampler::Ddim;
  MOH_FAIL("diffusion: unknown sampler '", name, "' (expected 'ddpm' or 'ddim')");
}

SampleStep p_sample(const GaussianDiffusion& diffusion, const DenoiseFn& model, const Tensor& x, const Tensor& t,
                    Generator& gen, bool clip_denoised) {
  ag::NoGradGuard no_grad;
  const ReversePrediction p = predict(diffusion, model, x, t, clip_denoised);
  const Tensor noise = normal(x.shape(), 0.0, 1.0, gen, x.dtype(), x.device());
  const Tensor scale = mul(exp(mul(p.moments.log_variance.data(), 0.5)), nonzero_mask(diffusion, t, x));
  return {add(p.moments.mean.data(), mul(scale, noise)), p.pred_xstart.data()};
}

SampleStep ddim_sample(const GaussianDiffusion& diffusion, const DenoiseFn& model, const Tensor& x, const Tensor& t,
                       Generator& gen, bool clip_denoised, double eta) {
  MOH_CHECK(std::isfinite(eta) && eta >= 0, "diffusion: ddim eta must be >= 0, got ", eta);
  ag::NoGradGuard no_grad;
  const DiffusionTables& tables = diffusion.tables();
  const Tensor pred_xstart = predict(diffusion, model, x, t, clip_denoised).pred_xstart.data();
  const Tensor eps = diffusion.predict_eps_from_xstart(x, t, pred_xstart);
  const size_t steps = tables.betas.size();
  std::vector<double> sigma(steps), xstart_scale(steps), eps_scale(steps);
  for (size_t s = 0; s < steps; ++s) {
    const double ab = tables.alphas_cumprod[s], ab_prev = tables.alphas_cumprod_prev[s];
    sigma[s] = eta * std::sqrt((1 - ab_prev) / (1 - ab)) * std::sqrt(1 - ab / ab_prev);
    xstart_scale[s] = std::sqrt(ab_prev);
    eps_scale[s] = std::sqrt(1 - ab_prev - sigma[s] * sigma[s]);
  }
  Tensor sample = add(mul(pred_xstart, diffusion.extract(xstart_scale, t, x)), mul(eps, diffusion.extract(eps_scale, t, x)));
  if (eta > 0) {
    const Tensor noise = normal(x.shape(), 0.0, 1.0, gen, x.dtype(), x.device());
    sample = add(sample, mul(mul(diffusion.extract(sigma, t, x), nonzero_mask(diffusion, t, x)), noise));
  }
  return {sample, pred_xstart};
}

Tensor sample_loop(const GaussianDiffusion& diffusion, const DenoiseFn& model, const Tensor& x_T, Generator& gen,
                   const SampleLoopOptions& options, const SampleProgressFn& progress) {
  MOH_CHECK(x_T.defined() && x_T.dim() >= 2, "diffusion: sample_loop needs x_T [N, C, ...], got ",
            x_T.defined() ? describe(x_T) : "undefined");
  const int64_t steps = diffusion.num_timesteps();
  Tensor x = x_T;
  for (int64_t i = steps - 1; i >= 0; --i) {
    const Tensor t = full({x.size(0)}, double(i), DType::Int64, x.device());
    x = options.sampler == DiffusionSampler::Ddpm
            ? p_sample(diffusion, model, x, t, gen, options.clip_denoised).sample
            : ddim_sample(diffusion, model, x, t, gen, options.clip_denoised, options.eta).sample;
    if (progress) progress(steps - i, steps);
  }
  return x;
}

}  // namespace moh
