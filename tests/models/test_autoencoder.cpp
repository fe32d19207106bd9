// The latent autoencoder (models/autoencoder): forward, loss and every gradient against the PyTorch
// twin's fixture (tests/reference/make_autoencoder_fixture.py), the SD preset's size and parameter names
// (the Stable-Diffusion VAE's), the posterior's KL against its closed form and its sampling, shapes
// for the Fashion-MNIST preset, and the option and input checks.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "autograd/autograd.h"
#include "core/factory.h"
#include "core/ops.h"
#include "models/autoencoder/autoencoder.h"
#include "tests/core/golden_fixture.h"
#include "tests/core/nn_test_util.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using nn_test::expect_close;
using test::expect_error;

// The fixture's model: 2 image channels, ch 8, ch_mult [1, 2], one ResnetBlock, mid attention, 4 groups, z 3.
AutoencoderOptions fixture_options(DType dtype) {
  AutoencoderOptions o;
  o.in_channels = 2, o.base_channels = 8, o.channel_mult = {1, 2}, o.res_blocks = 1, o.latent_channels = 3;
  o.mid_attention = true, o.norm_groups = 4, o.dtype = dtype;
  return o;
}

StateDict fixture_state(const golden::Fixture& f) {
  StateDict state;
  for (const auto& [key, t] : f.tensors)
    if (key.rfind("state.", 0) == 0) state[key.substr(6)] = t;
  return state;
}

TEST(GoldenAutoencoder, ForwardLossAndGradientsMatchPyTorchInFloat64) {
  const golden::Fixture f = golden::load("autoencoder_small");
  Generator gen(0);
  Autoencoder model(fixture_options(DType::Float64), gen);
  model.load_state_dict(fixture_state(f));  // strict: the twin's names, one for one
  ag::Variable x(f["x"].to(DType::Float64), true);
  const LatentPosterior posterior = model.encode(x);
  expect_close(posterior.mean.data(), f["mean"], 1e-10, "mean");
  expect_close(posterior.logvar.data(), f["logvar"], 1e-10, "logvar");
  expect_close(model.decode(posterior.mean).data(), f["recon_mean"], 1e-10, "recon_mean");
  // The fixture's sample: mean + exp(logvar / 2) * noise with the stored noise.
  const ag::Variable noise(f["noise"].to(DType::Float64));
  const ag::Variable z = ag::add(posterior.mean, ag::mul(ag::exp(ag::mul(posterior.logvar, 0.5)), noise));
  const AutoencoderOutput out{posterior, model.decode(z)};
  expect_close(out.reconstruction.data(), f["recon_sample"], 1e-10, "recon_sample");
  const AutoencoderLoss loss = autoencoder_loss(x, out, ReconstructionLoss::L1, 0.01);
  expect_close(loss.total.data(), f["loss"], 1e-10, "loss");
  expect_close(loss.reconstruction.data(), f["rec"], 1e-10, "rec");
  expect_close(loss.kl.data(), f["kl"], 1e-10, "kl");
  ag::backward(loss.total);
  expect_close(x.grad(), f["grad.x"], 1e-8, "grad.x");
  int checked = 0;
  for (const auto& [name, p] : model.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    // atol: the key bias's gradient is zero in exact arithmetic (softmax ignores a shift shared by all keys).
    expect_close(p.grad(), f["grad." + name], 1e-8, "grad." + name, 1e-15);
    ++checked;
  }
  EXPECT_EQ(checked, int(fixture_state(f).size()));
}

TEST(GoldenAutoencoder, Float32ReconstructionMatchesPyTorch) {
  const golden::Fixture f = golden::load("autoencoder_small");
  Generator gen(0);
  Autoencoder model(fixture_options(DType::Float32), gen);
  model.load_state_dict(fixture_state(f));
  const AutoencoderOutput out = model.forward(ag::Variable(f["x"]), nullptr);
  expect_close(out.posterior.mean.data(), f["mean"], 1e-4, "mean");
  expect_close(out.reconstruction.data(), f["recon_mean"], 1e-4, "recon_mean");
}

TEST(Autoencoder, SdPresetHasTheStableDiffusionVaeParameters) {
  Generator gen(0);
  const Autoencoder model(autoencoder_preset("sd"), gen);
  EXPECT_EQ(model.num_parameters(), 83653863);  // the SD v1 VAE's count (the twin builds the same)
  std::set<std::string> names;
  for (const auto& [name, p] : model.named_parameters()) names.insert(name);
  for (const char* name : {"encoder.conv_in.weight", "encoder.down.0.block.1.norm2.bias",
                           "encoder.down.1.block.0.nin_shortcut.weight", "encoder.down.2.downsample.conv.weight",
                           "encoder.mid.attn_1.proj_out.weight", "encoder.conv_out.weight", "quant_conv.weight",
                           "post_quant_conv.bias", "decoder.mid.block_2.conv1.weight",
                           "decoder.up.3.block.2.conv2.weight", "decoder.up.1.upsample.conv.weight",
                           "decoder.up.1.block.0.nin_shortcut.weight", "decoder.norm_out.weight"})
    EXPECT_TRUE(names.count(name)) << name;
  EXPECT_FALSE(names.count("encoder.down.3.downsample.conv.weight"));  // the last level does not down-sample
  EXPECT_FALSE(names.count("decoder.up.0.upsample.conv.weight"));      // nor does the first level up-sample
}

TEST(Autoencoder, FmnistPresetMapsPaddedImagesToEightByEightLatents) {
  Generator gen(3), noise(4);
  const AutoencoderOptions o = autoencoder_preset("fmnist");
  EXPECT_EQ(o.downsample_factor(), 4);
  const Autoencoder model(o, gen);
  EXPECT_EQ(model.num_parameters(), 681333);  // the twin's count (tests/reference/autoencoder_reference.py)
  const ag::Variable x(uniform({2, 1, 32, 32}, -1.0, 1.0, gen));
  const AutoencoderOutput out = model.forward(x, &noise);
  EXPECT_EQ(out.posterior.mean.shape(), (Shape{2, 4, 8, 8}));
  EXPECT_EQ(out.posterior.logvar.shape(), (Shape{2, 4, 8, 8}));
  EXPECT_EQ(out.reconstruction.shape(), (Shape{2, 1, 32, 32}));
  EXPECT_EQ(model.decode(ag::Variable(zeros({1, 4, 5, 3}))).shape(), (Shape{1, 1, 20, 12}));
}

TEST(Autoencoder, KlMatchesTheClosedFormAndSamplesFollowTheSeed) {
  // KL(N(m, e^l) || N(0, 1)) = 0.5 (m^2 + e^l - 1 - l) per element, summed per sample.
  const Tensor m = from_vector<double>({0.5, -1.0, 0.0, 2.0}, {2, 2, 1, 1});
  const Tensor l = from_vector<double>({0.0, std::log(2.0), -1.0, 0.5}, {2, 2, 1, 1});
  const LatentPosterior p{ag::Variable(m), ag::Variable(l)};
  const double kl0 = 0.5 * (0.25 + 1 - 1 - 0) + 0.5 * (1 + 2 - 1 - std::log(2.0));
  const double kl1 = 0.5 * (0 + std::exp(-1.0) - 1 + 1) + 0.5 * (4 + std::exp(0.5) - 1 - 0.5);
  expect_close(p.kl().data(), {kl0, kl1}, 1e-12, "kl");
  Generator a(9), b(9), c(10);
  const Tensor s1 = p.sample(a).data(), s2 = p.sample(b).data(), s3 = p.sample(c).data();
  test::expect_same_bytes(s1, s2, "same seed");
  EXPECT_NE(s1.to_vector<double>(), s3.to_vector<double>());
  // A posterior of (almost) zero variance samples its mean.
  const LatentPosterior sharp{ag::Variable(m), ag::Variable(full({2, 2, 1, 1}, -30.0, DType::Float64))};
  expect_close(sharp.sample(a).data(), m, 0, "sharp sample", 1e-5);  // std e^-15
}

TEST(Autoencoder, L2LossIsTheMeanSquaredErrorPlusScaledKl) {
  const ag::Variable x(from_vector<double>({0, 1, 2, 3}, {1, 1, 2, 2}));
  const ag::Variable y(from_vector<double>({1, 1, 0, 3}, {1, 1, 2, 2}));
  const AutoencoderOutput out{{ag::Variable(ones({1, 1, 1, 1}, DType::Float64)),
                               ag::Variable(zeros({1, 1, 1, 1}, DType::Float64))},
                              y};
  const AutoencoderLoss loss = autoencoder_loss(x, out, ReconstructionLoss::L2, 2.0);
  EXPECT_DOUBLE_EQ(loss.reconstruction.data().item<double>(), 5.0 / 4);  // (1 + 0 + 4 + 0) / 4
  EXPECT_DOUBLE_EQ(loss.kl.data().item<double>(), 0.5);                  // 0.5 * (1 + 1 - 1 - 0)
  EXPECT_DOUBLE_EQ(loss.total.data().item<double>(), 5.0 / 4 + 2.0 * 0.5 / 4);
  EXPECT_DOUBLE_EQ(autoencoder_loss(x, out, ReconstructionLoss::L1, 0.0).total.data().item<double>(), 3.0 / 4);
}

TEST(Autoencoder, RejectsOptionsAndInputsItCannotHonour) {
  Generator gen(0);
  AutoencoderOptions o = autoencoder_preset("fmnist");
  o.norm_groups = 5;
  expect_error<Error>([&] { Autoencoder m(o, gen); }, {"norm_groups 5", "level 0"});
  o = autoencoder_preset("fmnist");
  o.channel_mult = {};
  expect_error<Error>([&] { Autoencoder m(o, gen); }, {"channel_mult"});
  expect_error<Error>([] { autoencoder_preset("xl"); }, {"unknown model 'xl'", "fmnist or sd"});
  const Autoencoder model(autoencoder_preset("fmnist"), gen);
  expect_error<Error>([&] { model.encode(ag::Variable(zeros({1, 1, 30, 30}))); }, {"multiples of 4", "[1, 1, 30, 30]"});
  expect_error<Error>([&] { model.encode(ag::Variable(zeros({1, 3, 32, 32}))); }, {"[N, 1, H, W]"});
  expect_error<Error>([&] { model.decode(ag::Variable(zeros({1, 2, 8, 8}))); }, {"latents [N, 4, h, w]"});
}

}  // namespace
}  // namespace moh
