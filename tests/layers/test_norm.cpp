// LayerNorm and RMSNorm modules: PyTorch golden values (affine, plain, LLaMA RMSNorm), float64
// gradchecks including parameters and strided inputs, names, defaults and errors naming the layer.
#include <gtest/gtest.h>

#include "core/factory.h"
#include "layers/norm.h"
#include "tests/layers/layer_test_util.h"

namespace moh {
namespace {

using layer_test::input64;

TEST(LayerNorms, MatchTorch) {
  layer_test::Fixture f = layer_test::load_fixture("norm");
  LayerNorm ln({.dim = 8});
  layer_test::expect_matches_torch(
      ln, [&](const ag::Variable& x) { return ln.forward(x); }, f, "layer_norm");
  LayerNorm plain({.dim = 8, .affine = false});
  layer_test::expect_matches_torch(
      plain, [&](const ag::Variable& x) { return plain.forward(x); }, f, "layer_norm_plain");
  RMSNorm rms({.dim = 8});
  layer_test::expect_matches_torch(
      rms, [&](const ag::Variable& x) { return rms.forward(x); }, f, "rms_norm");
}

// Parameters away from ones/zeros so that weight and bias gradients are not symmetric.
void perturb(Module& m, uint64_t seed) {
  Generator gen(seed);
  for (auto& p : m.parameters()) {
    Tensor d = p.data();
    d.copy_(uniform(p.shape(), 0.5, 1.5, gen, DType::Float64));
  }
}

TEST(LayerNorms, Gradcheck) {
  LayerNorm ln({.dim = 5, .dtype = DType::Float64});
  perturb(ln, 1);
  auto ln_fwd = [&](const ag::Variable& x) { return ln.forward(x); };
  EXPECT_MODULE_GRADCHECK(ln, ln_fwd, input64({2, 3, 5}, 2));
  EXPECT_MODULE_GRADCHECK(ln, ln_fwd, ag::Variable(input64({5, 4}, 3).data().t(), true));
  LayerNorm plain({.dim = 4, .eps = 1e-3, .affine = false, .dtype = DType::Float64});
  EXPECT_TRUE(plain.parameters().empty());
  EXPECT_MODULE_GRADCHECK(
      plain, [&](const ag::Variable& x) { return plain.forward(x); }, input64({3, 4}, 4));

  RMSNorm rms({.dim = 6, .dtype = DType::Float64});
  perturb(rms, 5);
  auto rms_fwd = [&](const ag::Variable& x) { return rms.forward(x); };
  EXPECT_MODULE_GRADCHECK(rms, rms_fwd, input64({2, 2, 6}, 6));
  EXPECT_MODULE_GRADCHECK(rms, rms_fwd, ag::Variable(input64({6, 3}, 7).data().t(), true));
}

TEST(LayerNorms, DefaultsNamesAndNaiveValues) {
  LayerNorm ln({.dim = 3});
  auto named = ln.named_parameters();
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].first, "weight");
  EXPECT_EQ(named[1].first, "bias");
  EXPECT_EQ(named[0].second.data().to_vector<float>(), std::vector<float>(3, 1.0f));
  EXPECT_EQ(named[1].second.data().to_vector<float>(), std::vector<float>(3, 0.0f));
  EXPECT_NE(ln.summary().find("LayerNorm(3, eps=1e-05)"), std::string::npos) << ln.summary();
  // One row [1, 2, 6]: mean 3, variance 14/3.
  ag::Variable y = ln.forward(ag::Variable(from_vector<float>({1, 2, 6}, {1, 3})));
  const double rstd = 1.0 / std::sqrt(14.0 / 3.0 + 1e-5);
  nn_test::expect_close(y.data(), {-2 * rstd, -1 * rstd, 3 * rstd}, 1e-6, "layer_norm row");

  RMSNorm rms({.dim = 2});
  ASSERT_EQ(rms.named_parameters().size(), 1u);
  EXPECT_EQ(rms.named_parameters()[0].first, "weight");
  EXPECT_EQ(rms.options().eps, 1e-6);
  ag::Variable z = rms.forward(ag::Variable(from_vector<float>({3, 4}, {1, 2})));
  const double r = 1.0 / std::sqrt(12.5 + 1e-6);
  nn_test::expect_close(z.data(), {3 * r, 4 * r}, 1e-6, "rms_norm row");
}

TEST(LayerNorms, EmptyBatch) {
  LayerNorm ln({.dim = 4});
  RMSNorm rms({.dim = 4});
  EXPECT_EQ(ln.forward(ag::Variable(zeros({0, 4}))).shape(), Shape({0, 4}));
  EXPECT_EQ(rms.forward(ag::Variable(zeros({2, 0, 4}))).shape(), Shape({2, 0, 4}));
}

TEST(LayerNorms, ErrorsNameTheLayer) {
  LayerNorm ln({.dim = 4});
  EXPECT_ERROR_MENTIONS(ln.forward(ag::Variable(zeros({2, 3}))), "LayerNorm(4");
  EXPECT_ERROR_MENTIONS(ln.forward(ag::Variable(zeros({}))), "LayerNorm(4");
  EXPECT_ERROR_MENTIONS(ln.forward(ag::Variable(zeros({2, 4}, DType::Float64))), "LayerNorm(4");
  EXPECT_ERROR_MENTIONS(LayerNorm({.dim = 0}), "LayerNorm");
  RMSNorm rms({.dim = 4});
  EXPECT_ERROR_MENTIONS(rms.forward(ag::Variable(zeros({4, 2}))), "RMSNorm(4");
  EXPECT_ERROR_MENTIONS(RMSNorm({.dim = 4, .eps = -1}), "RMSNorm");
}

}  // namespace
}  // namespace moh
