// Reverse-process sampling (models/dit/diffusion_sampling): p_sample at t = 0 returning the mean
// and elsewhere the mean plus the generator's noise at the model's standard deviation; DDIM with
// eta 0 a deterministic map (its closed form, no noise drawn) and with eta 1 the posterior draw;
// sample_loop calling the model once per step with the mapped timesteps, reporting progress, being
// reproducible for a seed, and, with the exact denoiser of Gaussian data, drawing that data's
// distribution with both samplers.
#include <gtest/gtest.h>

#include <cmath>

#include "core/factory.h"
#include "core/ops.h"
#include "models/dit/diffusion_sampling.h"
#include "tests/core/nn_test_util.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using test::expect_error;

// A fixed "model": eps and variance values that depend on x_t and the model timestep, so a step
// that passes the wrong x or t changes the result.
Tensor fake_model(const Tensor& x, const Tensor& model_t) {
  const Tensor tt = model_t.to(x.dtype()).reshape({x.size(0), 1, 1, 1});
  const Tensor eps = mul(add(x, div(tt, 1000.0)), 0.5);
  return cat({eps, tanh(sub(x, div(tt, 500.0)))}, 1);
}

Tensor start(uint64_t seed, DType dtype = DType::Float64) {
  Generator gen(seed);
  return normal({3, 2, 4, 4}, 0, 1, gen, dtype);
}

ReversePrediction prediction(const GaussianDiffusion& d, const Tensor& x, const Tensor& t, bool clip) {
  return d.p_mean_variance(split_model_output(ag::Variable(fake_model(x, d.model_timesteps(t)))), x, t, clip);
}

TEST(DiffusionSampling, PSampleAtStepZeroReturnsTheMean) {
  const GaussianDiffusion d = GaussianDiffusion::create({});
  const Tensor x = start(1), t = zeros({3}, DType::Int64);
  Generator gen(9);
  const SampleStep step = p_sample(d, fake_model, x, t, gen, true);
  const ReversePrediction p = prediction(d, x, t, true);
  test::expect_same_bytes(step.sample, p.moments.mean.data(), "sample");
  test::expect_same_bytes(step.pred_xstart, p.pred_xstart.data(), "pred_xstart");
}

TEST(DiffusionSampling, PSampleAddsTheGeneratorsNoiseAtTheModelsStd) {
  const GaussianDiffusion d = GaussianDiffusion::create({BetaSchedule::Linear, 1000, "250"});
  const Tensor x = start(2), t = from_vector<int64_t>({0, 7, 249}, {3});
  Generator gen(9), same(9);
  const Tensor sample = p_sample(d, fake_model, x, t, gen, false).sample;
  const ReversePrediction p = prediction(d, x, t, false);
  const Tensor noise = normal(x.shape(), 0, 1, same, DType::Float64);
  const std::vector<double> got = sample.to_vector<double>(), mean = p.moments.mean.data().to_vector<double>();
  const std::vector<double> log_var = p.moments.log_variance.data().to_vector<double>(), z = noise.to_vector<double>();
  const size_t per = 32;
  for (size_t i = 0; i < got.size(); ++i) {
    const double expected = i < per ? mean[i] : mean[i] + std::exp(0.5 * log_var[i]) * z[i];  // sample 0 has t = 0
    ASSERT_NEAR(got[i], expected, 1e-12) << i;
  }
  EXPECT_EQ(gen.offset(), same.offset());  // one normal draw of x's size per step
}

TEST(DiffusionSampling, DdimWithEtaZeroIsTheDeterministicClosedForm) {
  const GaussianDiffusion d = GaussianDiffusion::create({BetaSchedule::Cosine, 1000, "ddim50"});
  const Tensor x = start(3), t = from_vector<int64_t>({0, 20, 49}, {3});
  Generator a(1), b(2);
  const SampleStep sa = ddim_sample(d, fake_model, x, t, a, false);
  const SampleStep sb = ddim_sample(d, fake_model, x, t, b, false);
  test::expect_same_bytes(sa.sample, sb.sample, "two generators");
  EXPECT_EQ(a.offset(), 0u);  // no noise drawn
  // x_{t-1} = x_0 sqrt(ab_prev) + sqrt(1 - ab_prev) eps, eps the model's (no clipping).
  const Tensor eps = split(fake_model(x, d.model_timesteps(t)), 2, 1)[0];
  const ReversePrediction p = prediction(d, x, t, false);
  const std::vector<double> x0 = p.pred_xstart.data().to_vector<double>(), e = eps.to_vector<double>();
  const std::vector<double> got = sa.sample.to_vector<double>();
  const std::vector<int64_t> ts = t.to_vector<int64_t>();
  for (size_t i = 0; i < got.size(); ++i) {
    const double ab_prev = d.tables().alphas_cumprod_prev[size_t(ts[i / 32])];
    ASSERT_NEAR(got[i], x0[i] * std::sqrt(ab_prev) + std::sqrt(1 - ab_prev) * e[i], 1e-10) << i;
  }
}

TEST(DiffusionSampling, DdimWithEtaOneIsThePosteriorDraw) {
  // sigma^2 = (1 - ab_prev) / (1 - ab) * (1 - ab / ab_prev) = the posterior variance, and the mean
  // becomes the posterior mean of the predicted x_0: DDPM with the small variance.
  const GaussianDiffusion d = GaussianDiffusion::create({});
  const Tensor x = start(4), t = from_vector<int64_t>({3, 400, 999}, {3});
  Generator gen(5), same(5);
  const Tensor sample = ddim_sample(d, fake_model, x, t, gen, true, 1.0).sample;
  const ReversePrediction p = prediction(d, x, t, true);
  const Tensor post_mean = d.q_posterior_mean_variance(p.pred_xstart, x, t).mean.data();
  const Tensor expected = add(post_mean, mul(sqrt(d.extract(d.tables().posterior_variance, t, x)),
                                             normal(x.shape(), 0, 1, same, DType::Float64)));
  nn_test::expect_close(sample, expected, 1e-9, "eta 1");
  expect_error([&] { ddim_sample(d, fake_model, x, t, gen, true, -0.5); }, {"eta must be >= 0"});
}

TEST(DiffusionSampling, LoopCallsTheModelWithMappedTimestepsAndReportsProgress) {
  const GaussianDiffusion d = GaussianDiffusion::create({BetaSchedule::Linear, 1000, "ddim50"});
  for (DiffusionSampler sampler : {DiffusionSampler::Ddpm, DiffusionSampler::Ddim}) {
    std::vector<int64_t> seen, done;
    const DenoiseFn model = [&](const Tensor& x, const Tensor& model_t) {
      const std::vector<int64_t> ts = model_t.to_vector<int64_t>();
      EXPECT_EQ(ts, std::vector<int64_t>(3, ts[0]));
      seen.push_back(ts[0]);
      return fake_model(x, model_t);
    };
    Generator gen(1);
    const Tensor out = sample_loop(d, model, start(5), gen, {sampler, false, 0.0},
                                   [&](int64_t k, int64_t total) {
                                     done.push_back(k);
                                     EXPECT_EQ(total, 50);
                                   });
    EXPECT_EQ(out.shape(), start(5).shape());
    ASSERT_EQ(seen.size(), 50u);
    for (size_t i = 0; i < 50; ++i) {
      EXPECT_EQ(seen[i], int64_t(980 - 20 * i));
      EXPECT_EQ(done[i], int64_t(i + 1));
    }
  }
}

TEST(DiffusionSampling, LoopIsReproducibleForASeed) {
  const GaussianDiffusion d = GaussianDiffusion::create({BetaSchedule::Linear, 1000, "25"});
  const auto run = [&](DiffusionSampler sampler, uint64_t seed) {
    Generator gen(seed);
    return sample_loop(d, fake_model, start(6, DType::Float32), gen, {sampler, true, 0.0});
  };
  test::expect_same_bytes(run(DiffusionSampler::Ddpm, 3), run(DiffusionSampler::Ddpm, 3), "ddpm, same seed");
  EXPECT_NE(run(DiffusionSampler::Ddpm, 3).to_vector<float>(), run(DiffusionSampler::Ddpm, 4).to_vector<float>());
  test::expect_same_bytes(run(DiffusionSampler::Ddim, 3), run(DiffusionSampler::Ddim, 4), "ddim eta 0, any seed");
  EXPECT_EQ(run(DiffusionSampler::Ddim, 3).dtype(), DType::Float32);
}

TEST(DiffusionSampling, ExactDenoiserOfGaussianDataSamplesTheData) {
  // Data x_0 ~ N(mu, s^2) per element: x_t ~ N(sqrt(ab) mu, ab s^2 + 1 - ab) and the optimal eps
  // prediction is E[eps | x_t] = sqrt(1 - ab) (x_t - sqrt(ab) mu) / (ab s^2 + 1 - ab), computed
  // from the base table at the model timestep the sampler passes.
  const double mu = 0.5, s = 0.2;
  const DiffusionTables base(make_betas(BetaSchedule::Linear, 1000));
  const DenoiseFn exact = [&](const Tensor& x, const Tensor& model_t) {
    const std::vector<int64_t> ts = model_t.to_vector<int64_t>();
    const double ab = base.alphas_cumprod[size_t(ts[0])];
    const Tensor eps = mul(sub(x, std::sqrt(ab) * mu), std::sqrt(1 - ab) / (ab * s * s + 1 - ab));
    return cat({eps, full(x.shape(), -1.0, x.dtype())}, 1);  // the posterior (small) variance
  };
  for (const auto& [sampler, spacing] : {std::pair{DiffusionSampler::Ddim, "ddim250"}, {DiffusionSampler::Ddpm, "250"}}) {
    const GaussianDiffusion d = GaussianDiffusion::create({BetaSchedule::Linear, 1000, spacing});
    Generator gen(7);
    const Tensor x_T = normal({4000, 1, 1, 1}, 0, 1, gen, DType::Float64);
    const std::vector<double> x0 = sample_loop(d, exact, x_T, gen, {sampler, false, 0.0}).to_vector<double>();
    double mean = 0, var = 0;
    for (double v : x0) mean += v / double(x0.size());
    for (double v : x0) var += (v - mean) * (v - mean) / double(x0.size() - 1);
    EXPECT_NEAR(mean, mu, 0.015) << spacing;  // standard error 0.2 / sqrt(4000) = 0.003
    EXPECT_NEAR(std::sqrt(var), s, 0.02) << spacing;
  }
}

TEST(DiffusionSampling, RejectsABadDenoiserOutputAndSamplerName) {
  const GaussianDiffusion d = GaussianDiffusion::create({});
  Generator gen(1);
  const DenoiseFn wrong = [](const Tensor& x, const Tensor&) { return x; };
  expect_error([&] { p_sample(d, wrong, start(1), zeros({3}, DType::Int64), gen, false); },
               {"denoiser returned", "[3, 2, 4, 4]", "[N, 2C, ...]"});
  expect_error([] { parse_diffusion_sampler("euler"); }, {"unknown sampler 'euler'", "'ddpm' or 'ddim'"});
  EXPECT_EQ(parse_diffusion_sampler("ddim"), DiffusionSampler::Ddim);
}

}  // namespace
}  // namespace moh
