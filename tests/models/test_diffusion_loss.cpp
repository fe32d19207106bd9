// The DiT training loss (models/dit/diffusion_loss): mse, the VB term in bits per dim and their sum,
// and the gradient wrt the model output, against the torch transcription of
// tests/reference/make_diffusion_fixture.py (a 1000-step linear process with LossType.MSE and a
// cosine process respaced "10,15,20" with RESCALED_MSE; t = 0 takes the decoder NLL); the VB term's
// gradient reaching only the variance half and the MSE's only the eps half; shape errors; and the
// uniform timestep draw.
#include <gtest/gtest.h>

#include <set>

#include "autograd/autograd.h"
#include "core/factory.h"
#include "models/dit/diffusion_loss.h"
#include "tests/core/nn_test_util.h"
#include "tests/models/diffusion_test_util.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using test::expect_error;
using test::fixture_tensor;
using test::values;

struct LossCase {
  std::string name;
  DiffusionOptions options;
  DiffusionLossType type;
};

const std::vector<LossCase>& loss_cases() {
  static const std::vector<LossCase> cases = {
      {"loss_linear", {BetaSchedule::Linear, 1000, ""}, DiffusionLossType::Mse},
      {"loss_cosine_spaced", {BetaSchedule::Cosine, 1000, "10,15,20"}, DiffusionLossType::RescaledMse}};
  return cases;
}

struct Evaluated {
  DiffusionLosses losses;
  ag::Variable output;  // the model-output leaf
};

Evaluated evaluate(const LossCase& c, DType dtype) {
  const GaussianDiffusion d = GaussianDiffusion::create(c.options);
  const auto in = [&](const std::string& what) { return fixture_tensor(c.name + "." + what).to(dtype); };
  ag::Variable output(in("model_output"), true);
  const Tensor x_t = d.q_sample(in("x_start"), fixture_tensor(c.name + ".t"), in("noise"));
  return {training_losses(d, output, in("x_start"), x_t, fixture_tensor(c.name + ".t"), in("noise"), c.type), output};
}

// The [N, C, ...] half of a [N, 2C, ...] tensor: 0 = eps, 1 = variance values.
std::vector<double> half(const Tensor& t, int64_t which) { return values(t.narrow(1, which * t.size(1) / 2, t.size(1) / 2)); }

TEST(DiffusionLoss, MatchesTheTorchTranscriptionWithItsGradient) {
  for (const LossCase& c : loss_cases()) {
    const GaussianDiffusion d = GaussianDiffusion::create(c.options);
    nn_test::expect_close(d.q_sample(fixture_tensor(c.name + ".x_start"), fixture_tensor(c.name + ".t"),
                                     fixture_tensor(c.name + ".noise")),
                          fixture_tensor(c.name + ".x_t"), 1e-12, c.name + " x_t");
    for (auto [dtype, rtol] : {std::pair{DType::Float64, 1e-10}, std::pair{DType::Float32, 2e-4}}) {
      const std::string what = c.name + (dtype == DType::Float64 ? " float64" : " float32");
      Evaluated e = evaluate(c, dtype);
      EXPECT_EQ(e.losses.loss.dtype(), dtype);
      nn_test::expect_close(e.losses.mse.data(), fixture_tensor(c.name + ".mse"), rtol, what + " mse");
      nn_test::expect_close(e.losses.vb.data(), fixture_tensor(c.name + ".vb"), rtol, what + " vb");
      nn_test::expect_close(e.losses.loss.data(), fixture_tensor(c.name + ".loss"), rtol, what + " loss");
      ag::backward(ag::sum(e.losses.loss));
      nn_test::expect_close(e.output.grad(), fixture_tensor(c.name + ".grad_output"), rtol, what + " grad");
    }
  }
}

TEST(DiffusionLoss, VbGradientReachesOnlyTheVarianceHalf) {
  for (const LossCase& c : loss_cases()) {
    const Tensor expected = fixture_tensor(c.name + ".grad_output");
    Evaluated vb = evaluate(c, DType::Float64);
    ag::backward(ag::sum(vb.losses.vb));
    for (double g : half(vb.output.grad(), 0)) ASSERT_EQ(g, 0.0) << c.name << ": the VB term moved the mean";
    nn_test::expect_close(half(vb.output.grad(), 1), half(expected, 1), 1e-10, c.name + " vb grad");
    Evaluated mse = evaluate(c, DType::Float64);
    ag::backward(ag::sum(mse.losses.mse));
    for (double g : half(mse.output.grad(), 1)) ASSERT_EQ(g, 0.0) << c.name << ": the MSE moved the variance";
    nn_test::expect_close(half(mse.output.grad(), 0), half(expected, 0), 1e-10, c.name + " mse grad");
  }
}

TEST(DiffusionLoss, RescaledMseScalesTheVbTermByStepsOver1000) {
  const LossCase& c = loss_cases()[1];  // 45 steps
  LossCase plain = c;
  plain.type = DiffusionLossType::Mse;
  const std::vector<double> rescaled = values(evaluate(c, DType::Float64).losses.vb.data());
  const std::vector<double> vb = values(evaluate(plain, DType::Float64).losses.vb.data());
  for (size_t n = 0; n < vb.size(); ++n) EXPECT_NEAR(rescaled[n], vb[n] * 45 / 1000, 1e-12 * std::abs(vb[n])) << n;
}

TEST(DiffusionLoss, CastsAFloat32ModelOutputToTheDataDtype) {
  const LossCase& c = loss_cases()[0];
  const GaussianDiffusion d = GaussianDiffusion::create(c.options);
  ag::Variable output(fixture_tensor(c.name + ".model_output").to(DType::Float32), true);
  const Tensor x_start = fixture_tensor(c.name + ".x_start"), t = fixture_tensor(c.name + ".t");
  const Tensor noise = fixture_tensor(c.name + ".noise");
  const DiffusionLosses losses = training_losses(d, output, x_start, d.q_sample(x_start, t, noise), t, noise);
  EXPECT_EQ(losses.loss.dtype(), DType::Float64);
  ag::backward(ag::sum(losses.loss));
  EXPECT_EQ(output.grad().dtype(), DType::Float32);
  nn_test::expect_close(output.grad(), fixture_tensor(c.name + ".grad_output"), 1e-4, "grad");
}

TEST(DiffusionLoss, RejectsMismatchedShapes) {
  const GaussianDiffusion d = GaussianDiffusion::create({});
  const Tensor x = zeros({2, 3, 4, 4}), t = from_vector<int64_t>({0, 5}, {2});
  expect_error([&] { training_losses(d, ag::Variable(zeros({2, 3, 4, 4})), x, x, t, x); }, {"[N, 2C, ...]"});
  expect_error([&] { training_losses(d, ag::Variable(zeros({2, 8, 4, 4})), x, x, t, x); },
               {"model output", "[2, 8, 4, 4]", "[N, 2C, ...] for data"});
  expect_error([&] { training_losses(d, ag::Variable(zeros({2, 6, 4, 4})), x, x, t, zeros({2, 3, 4})); },
               {"must share one [N, C, ...] shape"});
  expect_error([&] { training_losses(d, ag::Variable(zeros({2, 6, 4, 4})), x, x, from_vector<int64_t>({0}, {1}), x); },
               {"timesteps must be int64 [2]"});
}

TEST(DiffusionLoss, UniformTimestepsCoverTheRangeReproducibly) {
  Generator a(5), b(5), c(6);
  const std::vector<int64_t> ta = uniform_timesteps(800, 8, a).to_vector<int64_t>();
  EXPECT_EQ(ta, uniform_timesteps(800, 8, b).to_vector<int64_t>());
  EXPECT_NE(ta, uniform_timesteps(800, 8, c).to_vector<int64_t>());
  std::vector<int64_t> counts(8, 0);
  for (int64_t t : ta) {
    ASSERT_TRUE(t >= 0 && t < 8) << t;
    ++counts[size_t(t)];
  }
  for (int64_t k : counts) EXPECT_GT(k, 60);  // 100 expected per step, sd about 9.4
  EXPECT_EQ(uniform_timesteps(3, 1000, a).dtype(), DType::Int64);
  expect_error([&] { uniform_timesteps(4, 0, a); }, {">= 1 step"});
}

}  // namespace
}  // namespace moh
