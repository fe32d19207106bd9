// PatchEmbed: timm golden values (Conv2d + flatten + transpose, square and non-square grids),
// a naive convolution in double, float64 gradchecks, timm names/shapes, init fans and errors.
#include <gtest/gtest.h>

#include <cmath>

#include "core/factory.h"
#include "layers/patch_embed.h"
#include "tests/layers/layer_test_util.h"

namespace moh {
namespace {

using layer_test::input64;

TEST(LayerPatchEmbed, MatchesTimm) {
  layer_test::Fixture f = layer_test::load_fixture("patch_embed");
  Generator gen(1);
  PatchEmbed square({.img_size = 8, .patch_size = 4, .in_chans = 3, .embed_dim = 8}, gen);
  layer_test::expect_matches_torch(
      square, [&](const ag::Variable& x) { return square.forward(x); }, f, "square");
  PatchEmbed wide({.img_size = 4, .patch_size = 2, .in_chans = 2, .embed_dim = 5, .strict_img_size = false},
                  gen);
  layer_test::expect_matches_torch(
      wide, [&](const ag::Variable& x) { return wide.forward(x); }, f, "wide");
}

TEST(LayerPatchEmbed, MatchesNaiveConvolution) {
  Generator gen(2);
  const int64_t b = 2, c = 2, h = 6, w = 4, p = 2, d = 3;
  PatchEmbed pe({.img_size = 2,
                 .patch_size = p,
                 .in_chans = c,
                 .embed_dim = d,
                 .strict_img_size = false,
                 .dtype = DType::Float64},
                gen);
  Tensor bias = pe.state_dict().at("proj.bias");
  bias.copy_(uniform({d}, -1, 1, gen, DType::Float64));
  ag::Variable x(input64({b, c, w, h}, 3).data().transpose(2, 3));  // [b, c, h, w], strided
  ag::Variable y = pe.forward(x);
  ASSERT_EQ(y.shape(), Shape({b, (h / p) * (w / p), d}));
  std::vector<double> xs = x.data().to_vector<double>(),
                      ws = pe.state_dict().at("proj.weight").to_vector<double>(),
                      bs = bias.to_vector<double>(), expected;
  for (int64_t n = 0; n < b; ++n)
    for (int64_t gy = 0; gy < h / p; ++gy)
      for (int64_t gx = 0; gx < w / p; ++gx)
        for (int64_t o = 0; o < d; ++o) {
          double acc = bs[size_t(o)];
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t i = 0; i < p; ++i)
              for (int64_t j = 0; j < p; ++j)
                acc += ws[size_t(((o * c + ch) * p + i) * p + j)] *
                       xs[size_t(((n * c + ch) * h + gy * p + i) * w + gx * p + j)];
          expected.push_back(acc);
        }
  nn_test::expect_close(y.data(), expected, 1e-12, "patch_embed");
}

TEST(LayerPatchEmbed, Gradcheck) {
  Generator gen(4);
  PatchEmbed pe({.img_size = 4, .patch_size = 2, .in_chans = 2, .embed_dim = 3, .dtype = DType::Float64},
                gen);
  auto fwd = [&](const ag::Variable& x) { return pe.forward(x); };
  EXPECT_MODULE_GRADCHECK(pe, fwd, input64({2, 2, 4, 4}, 5));
  EXPECT_MODULE_GRADCHECK(pe, fwd, ag::Variable(input64({2, 2, 4, 4}, 6).data().transpose(2, 3), true));
}

TEST(LayerPatchEmbed, NamesShapesAndInit) {
  Generator gen(7);
  PatchEmbed pe({.img_size = 32, .patch_size = 8, .in_chans = 3, .embed_dim = 64}, gen);
  auto named = pe.named_parameters();
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].first, "proj.weight");
  EXPECT_EQ(named[0].second.shape(), Shape({64, 3, 8, 8}));
  EXPECT_EQ(named[1].first, "proj.bias");
  EXPECT_EQ(named[1].second.data().to_vector<float>(), std::vector<float>(64, 0.0f));
  EXPECT_EQ(pe.grid_size(), 4);
  EXPECT_EQ(pe.num_patches(), 16);
  // Xavier over the [D, C*p*p] view: fans 64 and 192.
  const double bound = std::sqrt(6.0 / (64 + 192));
  double max_abs = 0;
  for (float v : named[0].second.data().to_vector<float>()) max_abs = std::max(max_abs, std::fabs(double(v)));
  EXPECT_LE(max_abs, bound);
  EXPECT_GT(max_abs, 0.95 * bound);
  EXPECT_EQ(pe.forward(ag::Variable(zeros({1, 3, 32, 32}))).shape(), Shape({1, 16, 64}));
  EXPECT_NE(pe.summary().find("proj: PatchProjection(3, 64, kernel=stride=8)"), std::string::npos)
      << pe.summary();
}

TEST(LayerPatchEmbed, ErrorsNameTheLayer) {
  Generator gen(8);
  EXPECT_ERROR_MENTIONS(PatchEmbed({.img_size = 30, .patch_size = 8}, gen), "PatchEmbed: img_size 30");
  EXPECT_ERROR_MENTIONS(PatchEmbed({.img_size = 32, .patch_size = 0}, gen), "PatchEmbed");
  PatchEmbed pe({.img_size = 8, .patch_size = 4, .in_chans = 3, .embed_dim = 4}, gen);
  const char* label = "PatchEmbed(img=8, patch=4, in_chans=3, dim=4)";
  EXPECT_ERROR_MENTIONS(pe.forward(ag::Variable(zeros({1, 3, 8, 12}))), label);
  EXPECT_ERROR_MENTIONS(pe.forward(ag::Variable(zeros({1, 4, 8, 8}))), label);
  EXPECT_ERROR_MENTIONS(pe.forward(ag::Variable(zeros({3, 8, 8}))), label);
  EXPECT_ERROR_MENTIONS(pe.forward(ag::Variable(zeros({1, 3, 8, 8}, DType::Float64))), label);
  PatchEmbed loose({.img_size = 8, .patch_size = 4, .in_chans = 3, .embed_dim = 4, .strict_img_size = false},
                   gen);
  EXPECT_EQ(loose.forward(ag::Variable(zeros({2, 3, 4, 12}))).shape(), Shape({2, 3, 4}));
  EXPECT_ERROR_MENTIONS(loose.forward(ag::Variable(zeros({1, 3, 8, 10}))),
                        "not divisible by the patch size 4");
}

}  // namespace
}  // namespace moh
