// Global gradient norm and clipping: the norm against a double loop over several parameters
// (including a strided gradient and one big enough to be chunked), PyTorch's clip factor,
// thread-count independence, skipped and tied parameters, non-finite reports, bad max_norm.
#include <gtest/gtest.h>

#include <cmath>

#include "core/ops.h"
#include "tests/core/nn_test_util.h"
#include "tests/trainers/trainer_test_util.h"
#include "trainers/grad_clip.h"

namespace moh {
namespace {

using trainer_test::expect_error;
using trainer_test::named_leaf;

double naive_norm(const NamedParameters& params) {
  double s = 0;
  for (const auto& [_, p] : params)
    if (p.grad().defined())
      for (double g : p.grad().to_vector<double>()) s += g * g;
  return std::sqrt(s);
}

NamedParameters sample(uint64_t seed) {
  Generator gen(seed);
  NamedParameters ps;
  ag::Variable a(zeros({3, 4}), true), b(zeros({5}), true), c(zeros({200, 100}), true), d(zeros({2}), true);
  a.set_grad(normal({3, 4}, 0, 1, gen));
  b.set_grad(normal({5}, 0, 1, gen));
  c.set_grad(normal({100, 200}, 0, 1, gen).t());  // 20000 elements over two chunks, strided
  return {{"a", a}, {"b", b}, {"c", c}, {"d", d}};  // d has no gradient
}

TEST(TrainerGradClip, NormMatchesDoubleLoopAndLeavesGradientsAlone) {
  NamedParameters ps = sample(1);
  std::vector<double> before = ps[0].second.grad().to_vector<double>();
  GradNorm n = grad_norm(ps);
  EXPECT_NEAR(n.norm, naive_norm(ps), 1e-12 * n.norm);
  EXPECT_TRUE(n.finite());
  EXPECT_FALSE(n.clipped());
  EXPECT_EQ(ps[0].second.grad().to_vector<double>(), before);
  EXPECT_EQ(grad_norm({}).norm, 0);
}

TEST(TrainerGradClip, NormDoesNotDependOnTheThreadCount) {
  NamedParameters ps = sample(2);
  const int threads = num_threads();
  set_num_threads(1);
  const double one = grad_norm(ps).norm;
  set_num_threads(2);
  const double two = grad_norm(ps).norm;
  set_num_threads(threads);
  EXPECT_EQ(one, two);
}

TEST(TrainerGradClip, ClipsByPyTorchsFactor) {
  NamedParameters ps = sample(3);
  const double norm = naive_norm(ps);
  std::vector<double> a = ps[0].second.grad().to_vector<double>(), c = ps[2].second.grad().to_vector<double>();
  GradNorm n = clip_grad_norm(ps, 2.0);
  EXPECT_NEAR(n.norm, norm, 1e-12 * norm);  // the norm before clipping
  const double scale = 2.0 / (n.norm + 1e-6);
  EXPECT_EQ(n.scale, scale);
  EXPECT_TRUE(n.clipped());
  for (double& g : a) g *= scale;
  for (double& g : c) g *= scale;
  nn_test::expect_close(ps[0].second.grad(), a, 1e-6, "a clipped");
  nn_test::expect_close(ps[2].second.grad(), c, 1e-6, "c clipped (was strided)");
  EXPECT_NEAR(naive_norm(ps), 2.0, 1e-5);
  EXPECT_FALSE(ps[3].second.grad().defined());
}

TEST(TrainerGradClip, BelowTheLimitNothingChanges) {
  ag::Variable w = named_leaf("w", {0, 0}, {2}, {3, 4});
  GradNorm n = clip_grad_norm({{"w", w}}, 5.0);  // norm 5: factor 5 / (5 + 1e-6) < 1 clips a hair
  EXPECT_EQ(n.norm, 5.0);
  EXPECT_TRUE(n.clipped());
  n = clip_grad_norm({{"w", w}}, 10.0);
  EXPECT_FALSE(n.clipped());
  EXPECT_EQ(n.scale, 1.0);
  nn_test::expect_close(w.grad(), {3 * 5 / (5 + 1e-6), 4 * 5 / (5 + 1e-6)}, 1e-15, "unchanged by the second call");
}

TEST(TrainerGradClip, TiedWeightCountsOnce) {
  ag::Variable w = named_leaf("w", {0, 0}, {2}, {3, 4});
  EXPECT_EQ(grad_norm({{"emb.weight", w}, {"head.weight", w}}).norm, 5.0);
}

TEST(TrainerGradClip, ReportsTheFirstNonFiniteGradientAndDoesNotClip) {
  ag::Variable a = named_leaf("a", {0, 0}, {2}, {3, 4});
  ag::Variable b = named_leaf("b", {0, 0, 0}, {3}, {1, NAN, 2});
  ag::Variable c = named_leaf("c", {0}, {1}, {INFINITY});
  GradNorm n = clip_grad_norm({{"a", a}, {"blocks.1.b", b}, {"c", c}}, 1.0);
  EXPECT_FALSE(n.finite());
  EXPECT_EQ(n.nonfinite, "blocks.1.b");
  EXPECT_TRUE(std::isnan(n.norm));
  EXPECT_FALSE(n.clipped());
  EXPECT_EQ(a.grad().to_vector<double>(), std::vector<double>({3, 4}));
  n = grad_norm({{"a", a}, {"c", c}});
  EXPECT_EQ(n.nonfinite, "c");
  EXPECT_TRUE(std::isinf(n.norm));
  // A big float32 gradient with one inf deep inside a later chunk.
  Tensor big = zeros({40000});
  big.narrow(0, 39999, 1).copy_(scalar_tensor(-INFINITY));
  ag::Variable v(zeros({40000}), true);
  v.set_grad(big);
  EXPECT_EQ(grad_norm({{"a", a}, {"v", v}}).nonfinite, "v");
}

TEST(TrainerGradClip, BadArgumentsThrow) {
  ag::Variable w = named_leaf("w", {0, 0}, {2}, {3, 4});
  expect_error([&] { clip_grad_norm({{"w", w}}, 0); }, "max_norm");
  expect_error([&] { clip_grad_norm({{"w", w}}, -1); }, "max_norm");
  expect_error([&] { clip_grad_norm({{"w", w}}, INFINITY); }, "max_norm");
  expect_error([&] { grad_norm({{"u", ag::Variable()}}); }, "'u' is undefined");
}

}  // namespace
}  // namespace moh
