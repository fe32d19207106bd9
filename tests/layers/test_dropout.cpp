// Dropout and DropPath modules: identity in eval mode and at p = 0, masks drawn from the shared
// generator (rates, 1/(1-p) scaling, per-sample masks for DropPath), gradients through the same
// mask, float64 gradchecks with a reset generator, and errors naming the layer.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "core/factory.h"
#include "layers/dropout.h"
#include "tests/layers/layer_test_util.h"

namespace moh {
namespace {

using layer_test::input64;

TEST(LayerDropout, IdentityInEvalModeAndAtZero) {
  auto gen = std::make_shared<Generator>(1);
  ag::Variable x(ones({4, 5}), true);
  Dropout drop(0.5, gen);
  drop.eval();
  EXPECT_EQ(drop.forward(x).impl(), x.impl());
  Dropout zero(0.0);  // no generator needed
  EXPECT_EQ(zero.forward(x).impl(), x.impl());
  DropPath path(0.5, gen);
  path.eval();
  EXPECT_EQ(path.forward(x).impl(), x.impl());
  EXPECT_EQ(DropPath(0.0).forward(x).impl(), x.impl());
  EXPECT_EQ(gen->offset(), 0u);  // nothing drawn
}

TEST(LayerDropout, DropsAtRateScalesAndBackpropagatesTheMask) {
  auto gen = std::make_shared<Generator>(2);
  Dropout drop(0.25, gen);
  ag::Variable x(full({100, 100}, 3.0), true);
  ag::Variable y = drop.forward(x);
  std::vector<float> out = y.data().to_vector<float>();
  int64_t dropped = 0;
  for (float v : out) {
    if (v == 0.0f)
      ++dropped;
    else
      EXPECT_FLOAT_EQ(v, 4.0f);  // 3 / 0.75
  }
  EXPECT_NEAR(double(dropped) / 1e4, 0.25, 0.02);
  ag::backward(y, ones({100, 100}));
  std::vector<float> g = x.grad().to_vector<float>();
  for (size_t i = 0; i < out.size(); ++i) EXPECT_FLOAT_EQ(g[i], out[i] == 0.0f ? 0.0f : 4.0f / 3.0f);

  ag::Variable y2 = drop.forward(x);  // the stream advanced: a new mask
  EXPECT_NE(y2.data().to_vector<float>(), out);
  auto replay = std::make_shared<Generator>(2);
  EXPECT_EQ(Dropout(0.25, replay).forward(x).data().to_vector<float>(), out);  // same seed, same mask
  ag::clear_tape();
  EXPECT_EQ(Dropout(1.0, gen).forward(x).data().to_vector<float>(), std::vector<float>(10000, 0.0f));
  ag::clear_tape();
}

TEST(LayerDropPath, DropsWholeSamples) {
  auto gen = std::make_shared<Generator>(3);
  DropPath path(0.3, gen);
  ag::Variable x(full({400, 3, 2}, 1.4), true);
  ag::Variable y = path.forward(x);
  std::vector<float> out = y.data().to_vector<float>();
  int64_t dropped = 0;
  for (int64_t b = 0; b < 400; ++b) {
    const float first = out[size_t(b * 6)];
    if (first == 0.0f)
      ++dropped;
    else
      EXPECT_FLOAT_EQ(first, 2.0f);  // 1.4 / 0.7
    for (int64_t i = 1; i < 6; ++i) EXPECT_EQ(out[size_t(b * 6 + i)], first) << "sample " << b;
  }
  EXPECT_NEAR(double(dropped) / 400, 0.3, 0.06);
  ag::backward(y, ones({400, 3, 2}));
  std::vector<float> g = x.grad().to_vector<float>();
  for (size_t i = 0; i < out.size(); ++i) EXPECT_FLOAT_EQ(g[i], out[i] == 0.0f ? 0.0f : 1.0f / 0.7f);
}

TEST(LayerDropout, GradcheckWithAResetGenerator) {
  auto gen = std::make_shared<Generator>(4);
  Dropout drop(0.4, gen);
  EXPECT_MODULE_GRADCHECK(
      drop,
      [&](const ag::Variable& x) {
        gen->set_state(4, 0);
        return drop.forward(x);
      },
      input64({6, 5}, 5));
  DropPath path(0.5, gen);
  EXPECT_MODULE_GRADCHECK(
      path,
      [&](const ag::Variable& x) {
        gen->set_state(6, 0);
        return path.forward(x);
      },
      input64({8, 2, 3}, 7));
}

TEST(LayerDropout, ErrorsNameTheLayer) {
  auto gen = std::make_shared<Generator>(8);
  EXPECT_ERROR_MENTIONS(Dropout(1.5, gen), "Dropout: p must be in [0, 1]");
  EXPECT_ERROR_MENTIONS(Dropout(-0.1, gen), "Dropout");
  EXPECT_ERROR_MENTIONS(Dropout(0.1), "Dropout(p=0.1): p > 0 needs a generator");
  EXPECT_ERROR_MENTIONS(DropPath(0.1), "DropPath(p=0.1): p > 0 needs a generator");
  EXPECT_ERROR_MENTIONS(DropPath(2.0, gen), "DropPath");
  EXPECT_ERROR_MENTIONS(DropPath(0.1, gen).forward(ag::Variable(zeros({}))), "DropPath(p=0.1)");
  EXPECT_ERROR_MENTIONS(Dropout(0.1, gen).forward(ag::Variable()), "Dropout(p=0.1)");
}

}  // namespace
}  // namespace moh
