// sample_dit: a seed reproduces the samples bit for bit (another seed does not), classifier-free guidance
// equals a DDIM loop written out with separate conditional and unconditional forwards, and labels or a
// guidance scale the model cannot honour are refused.
#include <gtest/gtest.h>

#include "autograd/autograd.h"
#include "core/ops.h"
#include "models/dit/guided_sampling.h"
#include "tests/test_util.h"

namespace moh {
namespace {

DitOptions tiny_options(double class_dropout = 0.1) {
  DitOptions o;
  o.input_size = 4, o.patch_size = 2, o.in_channels = 2, o.dim = 16, o.depth = 1, o.heads = 2;
  o.num_classes = 3, o.class_dropout_prob = class_dropout, o.frequency_dim = 8;
  o.dtype = DType::Float64;
  return o;
}

// adaLN-Zero starts at a zero output; random weights make the labels and timesteps matter.
void randomise(DiT& model, uint64_t seed) {
  Generator gen(seed);
  for (auto& [name, p] : model.named_parameters()) {
    Tensor t = p.data();
    t.copy_(normal(t.shape(), 0.0, 0.3, gen, t.dtype()));
  }
  model.eval();
}

GaussianDiffusion respaced(const std::string& spec) {
  DiffusionOptions o;
  o.steps = 100;
  o.respacing = spec;
  return GaussianDiffusion::create(o);
}

TEST(SampleDit, ASeedReproducesTheSamples) {
  Generator init(1);
  DiT model(tiny_options(), init);
  randomise(model, 2);
  const GaussianDiffusion diffusion = respaced("5");
  const Tensor labels = from_vector<int64_t>({0, 2, 1}, {3});
  auto draw = [&](uint64_t seed, double scale) {
    Generator gen(seed);
    return sample_dit(model, diffusion, labels, {scale, 0}, {}, gen);
  };
  const Tensor a = draw(7, 1.0), b = draw(7, 1.0), c = draw(8, 1.0);
  EXPECT_EQ(a.shape(), (Shape{3, 2, 4, 4}));
  test::expect_same_bytes(a, b, "same seed");
  EXPECT_NE(a.to_vector<double>(), c.to_vector<double>());
  test::expect_same_bytes(draw(7, 4.0), draw(7, 4.0), "same seed, guided");
  EXPECT_NE(draw(7, 4.0).to_vector<double>(), a.to_vector<double>());
}

TEST(SampleDit, GuidanceIsTheCombinationOfSeparateForwards) {
  Generator init(3);
  DiT model(tiny_options(), init);
  randomise(model, 4);
  const GaussianDiffusion diffusion = respaced("3");
  const Tensor labels = from_vector<int64_t>({1, 0}, {2});
  const double scale = 2.5;
  SampleLoopOptions ddim;
  ddim.sampler = DiffusionSampler::Ddim;  // eta 0: deterministic after x_T
  Generator gen(11);
  const Tensor guided = sample_dit(model, diffusion, labels, {scale, 0}, ddim, gen);

  Generator same(11);
  const Tensor x_T = normal({2, 2, 4, 4}, 0.0, 1.0, same, DType::Float64);
  const Tensor null = full({2}, 3.0, DType::Int64);
  const DenoiseFn by_hand = [&](const Tensor& x, const Tensor& t) {
    const Tensor cond = model.forward(ag::Variable(x), t, labels).out.data();
    const Tensor uncond = model.forward(ag::Variable(x), t, null).out.data();
    const Tensor eps = add(uncond.narrow(1, 0, 2), mul(sub(cond.narrow(1, 0, 2), uncond.narrow(1, 0, 2)), scale));
    return cat({eps, cond.narrow(1, 2, 2)}, 1);  // the conditional half keeps its own variance channels
  };
  const Tensor want = sample_loop(diffusion, by_hand, x_T, same, ddim);
  const std::vector<double> g = guided.to_vector<double>(), w = want.to_vector<double>();
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], 1e-10) << i;
}

TEST(SampleDit, RefusesLabelsAndGuidanceTheModelCannotHonour) {
  Generator init(5), gen(6);
  DiT model(tiny_options(), init);
  DiT no_null(tiny_options(0.0), init);
  const GaussianDiffusion diffusion = respaced("2");
  test::expect_error<Error>([&] { sample_dit(model, diffusion, from_vector<int64_t>({3}, {1}), {}, {}, gen); },
                            {"label 3 of sample 0", "[0, 3)"});
  test::expect_error<Error>([&] { sample_dit(model, diffusion, from_vector<double>({1}, {1}), {}, {}, gen); },
                            {"int64 labels [N]"});
  test::expect_error<Error>(
      [&] { sample_dit(no_null, diffusion, from_vector<int64_t>({1}, {1}), {4.0, 0}, {}, gen); },
      {"guidance scale 4", "null class"});
}

}  // namespace
}  // namespace moh
