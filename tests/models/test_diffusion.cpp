// Gaussian diffusion math (models/dit/noise_schedule, respacing, diffusion, gaussian_likelihood):
// the linear and cosine betas against their closed forms, every derived table against the torch
// transcription of tests/reference/make_diffusion_fixture.py, space_timesteps against the
// reference's outputs and its errors, respaced processes keeping the base alphas_cumprod, q(x_t | x_0),
// the posterior against Bayes' rule and a sampling check, and the KL / normal CDF / discretised
// log-likelihood on hand-computed values with float64 gradchecks.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "autograd/autograd.h"
#include "core/factory.h"
#include "models/dit/diffusion.h"
#include "models/dit/gaussian_likelihood.h"
#include "models/dit/respacing.h"
#include "tests/core/nn_test_util.h"
#include "tests/models/diffusion_test_util.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using test::expect_error;
using test::fixture_tensor;
using test::values;

ag::Variable scalar(double v) { return ag::Variable(scalar_tensor(v, DType::Float64)); }
double item(const ag::Variable& v) { return v.data().item<double>(); }

// ------------------------------------------------------------------------------ schedules

TEST(NoiseSchedule, LinearBetasRunEvenlyBetweenTheScaledEnds) {
  const std::vector<double> b = make_betas(BetaSchedule::Linear, 1000);
  ASSERT_EQ(b.size(), 1000u);
  for (size_t t : {0, 1, 500, 998, 999}) EXPECT_NEAR(b[t], 1e-4 + double(t) * (0.02 - 1e-4) / 999, 1e-17) << t;
  EXPECT_EQ(b.back(), 0.02);
  const std::vector<double> b250 = make_betas(BetaSchedule::Linear, 250);  // scaled by 1000 / 250
  EXPECT_NEAR(b250.front(), 4e-4, 1e-17);
  EXPECT_NEAR(b250[100], 4e-4 + 100 * (0.08 - 4e-4) / 249, 1e-16);
  EXPECT_EQ(b250.back(), 0.08);
}

TEST(NoiseSchedule, CosineBetasAreAlphaBarRatiosCappedAt0999) {
  const auto alpha_bar = [](double s) { return std::pow(std::cos((s + 0.008) / 1.008 * std::numbers::pi / 2), 2); };
  const std::vector<double> b = make_betas(BetaSchedule::Cosine, 1000);
  for (int t : {0, 1, 400, 990}) EXPECT_NEAR(b[size_t(t)], 1 - alpha_bar((t + 1) / 1000.0) / alpha_bar(t / 1000.0), 1e-15) << t;
  EXPECT_EQ(b[999], 0.999);  // alpha_bar(1) = 0: the ratio is capped
  EXPECT_EQ(betas_for_alpha_bar(4, [](double s) { return 1 - s; }, 0.6),
            (std::vector<double>{0.25, 1 - 0.5 / 0.75, 0.5, 0.6}));
}

TEST(NoiseSchedule, DerivedTablesMatchTheTorchTranscription) {
  const std::vector<int64_t> probe = fixture_tensor("probe_t").to_vector<int64_t>();
  for (BetaSchedule schedule : {BetaSchedule::Linear, BetaSchedule::Cosine}) {
    const DiffusionTables tab(make_betas(schedule, 1000));
    const std::string s = beta_schedule_name(schedule);
    const std::vector<std::pair<std::string, const std::vector<double>*>> tables = {
        {"betas", &tab.betas},
        {"alphas_cumprod", &tab.alphas_cumprod},
        {"alphas_cumprod_prev", &tab.alphas_cumprod_prev},
        {"sqrt_alphas_cumprod", &tab.sqrt_alphas_cumprod},
        {"sqrt_one_minus_alphas_cumprod", &tab.sqrt_one_minus_alphas_cumprod},
        {"log_one_minus_alphas_cumprod", &tab.log_one_minus_alphas_cumprod},
        {"sqrt_recip_alphas_cumprod", &tab.sqrt_recip_alphas_cumprod},
        {"sqrt_recipm1_alphas_cumprod", &tab.sqrt_recipm1_alphas_cumprod},
        {"posterior_variance", &tab.posterior_variance},
        {"posterior_log_variance_clipped", &tab.posterior_log_variance_clipped},
        {"posterior_mean_coef1", &tab.posterior_mean_coef1},
        {"posterior_mean_coef2", &tab.posterior_mean_coef2}};
    for (const auto& [name, table] : tables) {
      std::vector<double> at;
      for (int64_t t : probe) at.push_back((*table)[size_t(t)]);
      nn_test::expect_close(at, values(fixture_tensor(s + "." + name)), 1e-12, s + "." + name);
    }
  }
}

TEST(NoiseSchedule, TablesAtTheFirstStepsByHand) {
  const DiffusionTables tab(make_betas(BetaSchedule::Linear, 1000));
  const double b0 = 1e-4, b1 = 1e-4 + 0.0199 / 999;
  EXPECT_NEAR(tab.alphas_cumprod[1], (1 - b0) * (1 - b1), 1e-16);
  EXPECT_EQ(tab.alphas_cumprod_prev[0], 1.0);
  EXPECT_EQ(tab.posterior_variance[0], 0.0);  // x_0 is known given x_0
  EXPECT_NEAR(tab.posterior_variance[1] / (b1 * b0 / (1 - (1 - b0) * (1 - b1))), 1.0, 1e-11);
  EXPECT_EQ(tab.posterior_log_variance_clipped[0], std::log(tab.posterior_variance[1]));
  EXPECT_NEAR(tab.posterior_mean_coef1[0], 1.0, 1e-12);  // the posterior mean at t = 0 is x_0
  EXPECT_EQ(tab.posterior_mean_coef2[0], 0.0);
}

TEST(NoiseSchedule, RejectsBadBetasAndNames) {
  expect_error([] { DiffusionTables({0.5}); }, {"at least 2 steps"});
  expect_error([] { DiffusionTables({0.1, 0.0}); }, {"beta 1", "(0, 1]"});
  expect_error([] { DiffusionTables({0.1, 1.5}); }, {"beta 1 is 1.5"});
  expect_error([] { DiffusionTables({std::nan(""), 0.1}); }, {"beta 0"});
  expect_error([] { GaussianDiffusion::create({BetaSchedule::Linear, 10, ""}); }, {"reaches beta 2 >= 1", "10 steps"});
  expect_error([] { DiffusionTables({0.5, 1.11}); }, {"beta 1 is 1.11", "(0, 1]"});
  expect_error([] { make_betas(BetaSchedule::Cosine, 1); }, {"diffusion steps must be >= 2"});
  // The linear schedule scaled to 20 steps ends at beta 1 (alpha_bar 0): refused, 21 steps are fine.
  expect_error([] { make_betas(BetaSchedule::Linear, 20); }, {"reaches beta 1", "at 20 steps", "cosine"});
  EXPECT_LT(make_betas(BetaSchedule::Linear, 21).back(), 1.0);
  expect_error([] { parse_beta_schedule("quad"); }, {"unknown beta schedule 'quad'", "'linear' or 'cosine'"});
  EXPECT_EQ(parse_beta_schedule("cosine"), BetaSchedule::Cosine);
}

// ------------------------------------------------------------------------------ respacing

TEST(Respacing, SpaceTimestepsMatchesTheReference) {
  for (const auto& [spec, key] : {std::pair{"250", "spaced.250"}, {"ddim50", "spaced.ddim50"},
                                  {"10,15,20", "spaced.10_15_20"}})
    EXPECT_EQ(space_timesteps(1000, spec), fixture_tensor(key).to_vector<int64_t>()) << spec;
}

TEST(Respacing, SpaceTimestepsClosedForms) {
  std::vector<int64_t> every20, all;
  for (int64_t t = 0; t < 1000; t += 20) every20.push_back(t);
  for (int64_t t = 0; t < 1000; ++t) all.push_back(t);
  EXPECT_EQ(space_timesteps(1000, "ddim50"), every20);
  EXPECT_EQ(space_timesteps(1000, ""), all);
  EXPECT_EQ(space_timesteps(1000, "1000"), all);
  const std::vector<int64_t> s250 = space_timesteps(1000, "250");
  ASSERT_EQ(s250.size(), 250u);
  EXPECT_EQ(s250.front(), 0);
  EXPECT_EQ(s250.back(), 999);
  EXPECT_EQ(s250[1], 4);  // round(999 / 249) = round(4.012)
  // 10 sections of 10 steps, 2 each: the first and last of each section.
  EXPECT_EQ(space_timesteps(100, "2,2,2,2,2,2,2,2,2,2"),
            (std::vector<int64_t>{0, 9, 10, 19, 20, 29, 30, 39, 40, 49, 50, 59, 60, 69, 70, 79, 80, 89, 90, 99}));
  // 10 = 4 + 3 + 3 steps; section 1 (steps 4..6) at stride 2 / 2 = 1, one step of section 2 (its first).
  EXPECT_EQ(space_timesteps(10, "1,3,1"), (std::vector<int64_t>{0, 4, 5, 6, 7}));
  EXPECT_EQ(space_timesteps(9, "3"), (std::vector<int64_t>{0, 4, 8}));
  EXPECT_EQ(space_timesteps(11, "3"), (std::vector<int64_t>{0, 5, 10}));
  // Ties round to even, as Python's round: stride 2.5 gives 0, 2 (2.5), 5, 8 (7.5), 10.
  EXPECT_EQ(space_timesteps(11, "5"), (std::vector<int64_t>{0, 2, 5, 8, 10}));
}

TEST(Respacing, RejectsMalformedSpecs) {
  expect_error([] { space_timesteps(1000, "ddim999"); }, {"'ddim999'", "no integer stride gives exactly 999"});
  expect_error([] { space_timesteps(1000, "10,15,2000"); }, {"'10,15,2000'", "section 2 has 333 steps", "2000"});
  expect_error([] { space_timesteps(1000, "25o"); }, {"'25o'", "not a step count"});
  expect_error([] { space_timesteps(1000, "1,,2"); }, {"'1,,2'", "'' is not a step count"});
  expect_error([] { space_timesteps(1000, "ddim"); }, {"'ddim'", "not a step count"});
  expect_error([] { space_timesteps(1000, "-5"); }, {"'-5' is not a step count"});
  expect_error([] { space_timesteps(1000, "0"); }, {"'0' is not a step count"});
  expect_error([] { respace({0.9, 0.8, 0.7}, {0, 2, 1}); }, {"ascending"});
  expect_error([] { respace({0.9, 0.8, 0.7}, {0, 3}); }, {"below 3"});
}

TEST(Respacing, RespacedProcessKeepsTheBaseAlphasCumprod) {
  for (BetaSchedule schedule : {BetaSchedule::Linear, BetaSchedule::Cosine}) {
    const DiffusionTables base(make_betas(schedule, 1000));
    for (const char* spec : {"250", "ddim50", "10,15,20"}) {
      const GaussianDiffusion spaced = GaussianDiffusion::create({schedule, 1000, spec});
      const std::vector<int64_t> kept = space_timesteps(1000, spec);
      ASSERT_EQ(spaced.timestep_map(), kept) << spec;
      ASSERT_EQ(spaced.num_timesteps(), int64_t(kept.size()));
      for (size_t i = 0; i < kept.size(); ++i)
        ASSERT_NEAR(spaced.tables().alphas_cumprod[i], base.alphas_cumprod[size_t(kept[i])],
                    1e-11 * base.alphas_cumprod[size_t(kept[i])])  // 1 - (1 - ratio) loses digits where ratios are small
            << beta_schedule_name(schedule) << " " << spec << " step " << i;
    }
  }
  // The full spacing is the base process itself.
  const GaussianDiffusion full = GaussianDiffusion::create({BetaSchedule::Linear, 1000, "1000"});
  const DiffusionTables base(make_betas(BetaSchedule::Linear, 1000));
  for (size_t t = 0; t < 1000; ++t) ASSERT_NEAR(full.tables().betas[t], base.betas[t], 1e-15) << t;
}

TEST(Respacing, ModelTimestepsGoThroughTheMap) {
  const GaussianDiffusion spaced = GaussianDiffusion::create({BetaSchedule::Linear, 1000, "ddim50"});
  const Tensor t = from_vector<int64_t>({0, 1, 49, 7}, {4});
  EXPECT_EQ(spaced.model_timesteps(t).to_vector<int64_t>(), (std::vector<int64_t>{0, 20, 980, 140}));
  expect_error([&] { spaced.model_timesteps(from_vector<int64_t>({50}, {1})); }, {"timestep 50", "[0, 50)"});
  expect_error([&] { spaced.model_timesteps(from_vector<float>({1}, {1})); }, {"int64"});
}

// ------------------------------------------------------------------------------ q and the posterior

struct Batch {
  Tensor x_start, noise, t;
};

Batch batch64(uint64_t seed) {
  Generator gen(seed);
  return {uniform({4, 2, 3, 3}, -1, 1, gen, DType::Float64), normal({4, 2, 3, 3}, 0, 1, gen, DType::Float64),
          from_vector<int64_t>({0, 3, 500, 999}, {4})};
}

TEST(Diffusion, QSampleAndQMeanVarianceAreTheClosedForm) {
  const GaussianDiffusion d = GaussianDiffusion::create({});
  const Batch b = batch64(3);
  const std::vector<double> x0 = values(b.x_start), z = values(b.noise);
  const std::vector<double> xt = values(d.q_sample(b.x_start, b.t, b.noise));
  const GaussianMoments q = d.q_mean_variance(b.x_start, b.t);
  const std::vector<double> mean = values(q.mean.data());
  const std::vector<int64_t> ts = b.t.to_vector<int64_t>();
  for (size_t i = 0; i < x0.size(); ++i) {
    const double ac = d.tables().alphas_cumprod[size_t(ts[i / 18])];
    ASSERT_NEAR(xt[i], std::sqrt(ac) * x0[i] + std::sqrt(1 - ac) * z[i], 1e-14) << i;
    ASSERT_NEAR(mean[i], std::sqrt(ac) * x0[i], 1e-14) << i;
  }
  EXPECT_EQ(q.variance.shape(), (Shape{4, 1, 1, 1}));
  for (size_t n = 0; n < 4; ++n) {
    const double ac = d.tables().alphas_cumprod[size_t(ts[n])];
    EXPECT_NEAR(values(q.variance.data())[n], 1 - ac, 1e-15);
    EXPECT_NEAR(values(q.log_variance.data())[n], std::log(1 - ac), 1e-13);
  }
  expect_error([&] { d.q_sample(b.x_start, from_vector<int64_t>({0, 1}, {2}), b.noise); }, {"int64 [4]"});
  expect_error([&] { d.q_sample(b.x_start, from_vector<int64_t>({0, 1, 2, 1000}, {4}), b.noise); },
               {"timestep 1000 of sample 3", "[0, 1000)"});
}

TEST(Diffusion, PosteriorIsBayesRuleOfTheForwardSteps) {
  // q(x_{t-1} | x_t, x_0) ∝ N(x_{t-1}; sqrt(ab_{t-1}) x_0, 1 - ab_{t-1}) N(x_t; sqrt(a_t) x_{t-1}, b_t):
  // precision 1 / (1 - ab_{t-1}) + a_t / b_t, mean = variance * (sqrt(ab_{t-1}) x_0 / (1 - ab_{t-1}) + sqrt(a_t) x_t / b_t).
  for (BetaSchedule schedule : {BetaSchedule::Linear, BetaSchedule::Cosine}) {
    const GaussianDiffusion d = GaussianDiffusion::create({schedule, 1000, ""});
    Batch b = batch64(4);
    b.t = from_vector<int64_t>({1, 3, 500, 999}, {4});
    const Tensor x_t = d.q_sample(b.x_start, b.t, b.noise);
    const GaussianMoments post = d.q_posterior_mean_variance(ag::Variable(b.x_start), x_t, b.t);
    const std::vector<double> x0 = values(b.x_start), xt = values(x_t), mean = values(post.mean.data());
    const std::vector<int64_t> ts = b.t.to_vector<int64_t>();
    for (size_t i = 0; i < x0.size(); ++i) {
      const size_t t = size_t(ts[i / 18]);
      const double beta = d.tables().betas[t], ab_prev = d.tables().alphas_cumprod_prev[t];
      const double variance = 1 / (1 / (1 - ab_prev) + (1 - beta) / beta);
      const double expected = variance * (std::sqrt(ab_prev) * x0[i] / (1 - ab_prev) + std::sqrt(1 - beta) * xt[i] / beta);
      ASSERT_NEAR(mean[i], expected, 1e-12 * (1 + std::abs(expected))) << i;
      if (i % 18 == 0) {
        ASSERT_NEAR(values(post.variance.data())[i / 18], variance, 1e-12 * variance);
        ASSERT_NEAR(values(post.log_variance.data())[i / 18], std::log(variance), 1e-11);
      }
    }
  }
}

TEST(Diffusion, PosteriorMatchesSampledForwardChains) {
  // x_{t-1} ~ q(x_{t-1} | x_0), x_t = sqrt(a_t) x_{t-1} + sqrt(b_t) z: the least-squares fit of
  // x_{t-1} on x_t has the posterior's x_t coefficient, its intercept coef1 * x_0, and its residual
  // variance the posterior variance.
  const GaussianDiffusion d = GaussianDiffusion::create({});
  const int64_t n = 200000, t = 100;
  const double x0 = 0.7;
  Generator gen(11);
  const Tensor x_start = full({n, 1}, x0, DType::Float64);
  const Tensor x_prev = d.q_sample(x_start, full({n}, double(t - 1), DType::Int64), normal({n, 1}, 0, 1, gen, DType::Float64));
  const double beta = d.tables().betas[t];
  const Tensor x_t = add(mul(x_prev, std::sqrt(1 - beta)), mul(normal({n, 1}, 0, 1, gen, DType::Float64), std::sqrt(beta)));
  const std::vector<double> p = values(x_prev), q = values(x_t);
  double mp = 0, mq = 0;
  for (int64_t i = 0; i < n; ++i) mp += p[size_t(i)] / n, mq += q[size_t(i)] / n;
  double cov = 0, var_q = 0;
  for (int64_t i = 0; i < n; ++i) cov += (p[size_t(i)] - mp) * (q[size_t(i)] - mq), var_q += std::pow(q[size_t(i)] - mq, 2);
  const double slope = cov / var_q, intercept = mp - slope * mq;
  double residual = 0;
  for (int64_t i = 0; i < n; ++i) residual += std::pow(p[size_t(i)] - intercept - slope * q[size_t(i)], 2) / (n - 2);
  EXPECT_NEAR(slope, d.tables().posterior_mean_coef2[t], 0.002);
  EXPECT_NEAR(intercept, d.tables().posterior_mean_coef1[t] * x0, 0.002);
  EXPECT_NEAR(residual / d.tables().posterior_variance[t], 1.0, 0.01);  // sd of the ratio: sqrt(2 / n) = 0.003
}

TEST(Diffusion, XstartAndEpsPredictionsInvertQSample) {
  const GaussianDiffusion d = GaussianDiffusion::create({BetaSchedule::Cosine, 1000, ""});
  Batch b = batch64(5);
  b.t = from_vector<int64_t>({0, 3, 500, 990}, {4});
  const Tensor x_t = d.q_sample(b.x_start, b.t, b.noise);
  nn_test::expect_close(d.predict_xstart_from_eps(x_t, b.t, ag::Variable(b.noise)).data(), b.x_start, 1e-10, "x_0");
  nn_test::expect_close(d.predict_eps_from_xstart(x_t, b.t, b.x_start), b.noise, 1e-10, "eps");
}

TEST(Diffusion, PMeanVarianceMatchesTheTorchTranscription) {
  for (const auto& [name, options] : {std::pair{"loss_linear", DiffusionOptions{BetaSchedule::Linear, 1000, ""}},
                                      {"loss_cosine_spaced", DiffusionOptions{BetaSchedule::Cosine, 1000, "10,15,20"}}}) {
    const GaussianDiffusion d = GaussianDiffusion::create(options);
    const std::string c = name;
    const ReversePrediction p = d.p_mean_variance(split_model_output(ag::Variable(fixture_tensor(c + ".model_output"))),
                                                fixture_tensor(c + ".x_t"), fixture_tensor(c + ".t"), true);
    nn_test::expect_close(p.moments.mean.data(), fixture_tensor(c + ".mean"), 1e-10, c + " mean");
    nn_test::expect_close(p.moments.log_variance.data(), fixture_tensor(c + ".log_variance"), 1e-10, c + " log var");
    nn_test::expect_close(p.moments.variance.data(), exp(fixture_tensor(c + ".log_variance")), 1e-10, c + " var");
    nn_test::expect_close(p.pred_xstart.data(), fixture_tensor(c + ".pred_xstart"), 1e-10, c + " x_0");
  }
}

TEST(Diffusion, VarianceValuesInterpolateTheLogVarianceRange) {
  const GaussianDiffusion d = GaussianDiffusion::create({});
  const Tensor x_t = zeros({3, 1, 1, 1}, DType::Float64), t = from_vector<int64_t>({0, 10, 999}, {3});
  const auto log_var = [&](double v) {
    const EpsAndVariance out{ag::Variable(zeros({3, 1, 1, 1}, DType::Float64)), ag::Variable(full({3, 1, 1, 1}, v, DType::Float64))};
    return values(d.p_mean_variance(out, x_t, t, false).moments.log_variance.data());
  };
  const auto& tab = d.tables();
  for (size_t n = 0; n < 3; ++n) {
    const size_t s = size_t(std::vector<int64_t>{0, 10, 999}[n]);
    EXPECT_NEAR(log_var(-1)[n], tab.posterior_log_variance_clipped[s], 1e-12) << s;
    EXPECT_NEAR(log_var(1)[n], tab.log_betas[s], 1e-12) << s;
    EXPECT_NEAR(log_var(0)[n], 0.5 * (tab.log_betas[s] + tab.posterior_log_variance_clipped[s]), 1e-12) << s;
  }
  expect_error([] { split_model_output(ag::Variable(zeros({2, 3, 4}))); }, {"[N, 2C, ...]", "[2, 3, 4]"});
}

// ------------------------------------------------------------------------------ KL and likelihoods

TEST(GaussianLikelihood, NormalKlOnHandValues) {
  EXPECT_EQ(item(normal_kl(scalar(0), scalar(0), scalar(0), scalar(0))), 0.0);
  EXPECT_NEAR(item(normal_kl(scalar(1), scalar(0), scalar(0), scalar(0))), 0.5, 1e-15);
  EXPECT_NEAR(item(normal_kl(scalar(0), scalar(0), scalar(0), scalar(2))), 0.5 * (1 + std::exp(-2.0)), 1e-15);
  // N(0.5, 2) against N(-1, 0.5): 0.5 * (log(0.5 / 2) - 1 + 2 / 0.5 + 1.5^2 / 0.5).
  EXPECT_NEAR(item(normal_kl(scalar(0.5), scalar(std::log(2.0)), scalar(-1), scalar(std::log(0.5)))),
              0.5 * (std::log(0.25) - 1 + 4 + 4.5), 1e-14);
  // Broadcasts: [2] against scalars.
  const ag::Variable kl =
      normal_kl(ag::Variable(from_vector<double>({0, 2}, {2})), scalar(0), scalar(0), scalar(0));
  EXPECT_EQ(values(kl.data()), (std::vector<double>{0.0, 2.0}));
}

TEST(GaussianLikelihood, ApproxNormalCdfOnHandValues) {
  const auto cdf = [](double x) { return item(approx_standard_normal_cdf(scalar(x))); };
  EXPECT_EQ(cdf(0), 0.5);
  EXPECT_NEAR(cdf(1), 0.5 * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * 1.044715)), 1e-15);
  for (double x : {0.3, 1.0, 2.5}) {
    EXPECT_NEAR(cdf(-x), 1 - cdf(x), 1e-15) << x;
    EXPECT_NEAR(cdf(x), 0.5 * std::erfc(-x / std::numbers::sqrt2), 5e-4) << x;  // close to the exact CDF
  }
}

TEST(GaussianLikelihood, DiscretizedLogLikelihoodOnHandValues) {
  const auto c = [](double x) { return 0.5 * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x))); };
  const auto ll = [](double x, double mean, double log_scale) {
    return item(discretized_gaussian_log_likelihood(scalar_tensor(x, DType::Float64), scalar(mean), scalar(log_scale)));
  };
  const double w = 1.0 / 255;
  // Interior bin: log(cdf((x - m + w) / s) - cdf((x - m - w) / s)).
  EXPECT_NEAR(ll(0, 0, 0), std::log(c(w) - c(-w)), 1e-12);
  EXPECT_NEAR(ll(0.3, 0.1, std::log(0.05)), std::log(c((0.2 + w) / 0.05) - c((0.2 - w) / 0.05)), 1e-12);
  EXPECT_NEAR(ll(0.999, 0.9, std::log(0.1)), std::log(c((0.099 + w) / 0.1) - c((0.099 - w) / 0.1)), 1e-12);
  // Edge bins are open: x = -1 takes all mass below -1 + w, x = 1 all mass above 1 - w.
  EXPECT_NEAR(ll(-1, -0.9, std::log(0.2)), std::log(c((-0.1 + w) / 0.2)), 1e-12);
  EXPECT_NEAR(ll(1, 0.8, std::log(0.2)), std::log(1 - c((0.2 - w) / 0.2)), 1e-12);
  EXPECT_NEAR(ll(-0.9995, 0, 0), std::log(c(-0.9995 + w)), 1e-12);
  // A sharp Gaussian centred on the bin holds all its mass; one far away is floored at 1e-12.
  EXPECT_NEAR(ll(0.2, 0.2, std::log(1e-4)), 0.0, 1e-12);
  EXPECT_NEAR(ll(-0.5, 0.5, std::log(1e-3)), std::log(1e-12), 1e-9);
  expect_error([] { discretized_gaussian_log_likelihood(zeros({2}, DType::Float64), scalar(0), scalar(0)); },
               {"must have one shape"});
}

TEST(GaussianLikelihood, GradientsMatchFiniteDifferences) {
  Generator gen(8);
  const auto var = [&](double lo, double hi) {
    return ag::Variable(uniform({2, 3}, lo, hi, gen, DType::Float64), true);
  };
  const ag::Variable m1 = var(-1, 1), lv1 = var(-2, 0), m2 = var(-1, 1), lv2 = var(-2, 0);
  const ag::GradcheckResult kl = ag::gradcheck(
      [](const std::vector<ag::Variable>& in) { return normal_kl(in[0], in[1], in[2], in[3]); }, {m1, lv1, m2, lv2});
  EXPECT_TRUE(kl.ok) << kl.message;
  const Tensor x = from_vector<double>({-1, -0.5, 0, 0.25, 0.9, 1}, {2, 3});
  const ag::Variable means = var(-0.6, 0.6), log_scales = var(-2.5, -1);
  const ag::GradcheckResult ll = ag::gradcheck(
      [&](const std::vector<ag::Variable>& in) { return discretized_gaussian_log_likelihood(x, in[0], in[1]); },
      {means, log_scales});
  EXPECT_TRUE(ll.ok) << ll.message;
}

}  // namespace
}  // namespace moh
