// Golden tests of the image ops against PyTorch 1.13: fixtures made by
// tests/reference/make_image_op_fixtures.py (read via MOH_FIXTURE_DIR) hold the input, and per
// case the output, a fixed upstream gradient and torch autograd's grad_x (and, for conv2d and
// group_norm, the parameters and their gradients; group_norm runs through the tape, ag::group_norm). Forward and backward
// must match to 1e-5 relative in float32 and 1e-10 in float64 (nn_test_util.h's closeness rule).
#include <gtest/gtest.h>

#include <string>

#include "autograd/autograd.h"
#include "core/ops.h"
#include "tests/core/golden_fixture.h"
#include "tests/core/nn_test_util.h"

namespace moh {
namespace {

using nn_test::expect_close;
using golden::kPrefixes;
using golden::load;
using golden::tol;

TEST(GoldenImageOps, FixturesLoadWithTheirMetadata) {
  for (const char* family : {"upsample_nearest2d", "avg_pool2d", "conv2d", "group_norm"}) {
    EXPECT_EQ(load_safetensors_metadata(golden::fixture_path(family)).at("generator"),
              "tests/reference/make_image_op_fixtures.py");
    for (const std::string p : kPrefixes)
      EXPECT_EQ(load(family)[p + ".x"].dtype(), p == "f32" ? DType::Float32 : DType::Float64) << family;
  }
}

TEST(GoldenImageOps, UpsampleNearest2d) {
  const golden::Fixture f = load("upsample_nearest2d");
  for (const std::string p : kPrefixes)
    for (int64_t scale : {2, 3}) {
      const std::string c = p + ".scale" + std::to_string(scale);
      expect_close(upsample_nearest2d(f[p + ".x"], scale), f[c + ".out"], tol(p), c + " out");
      expect_close(upsample_nearest2d_backward(f[c + ".grad_out"], scale), f[c + ".grad_x"], tol(p), c + " grad_x");
    }
}

TEST(GoldenImageOps, AvgPool2d) {
  const golden::Fixture f = load("avg_pool2d");
  struct Pool {
    int64_t kernel, stride;
  };
  for (const std::string p : kPrefixes)
    for (const Pool k : {Pool{2, 2}, Pool{3, 2}}) {
      const std::string c = p + ".k" + std::to_string(k.kernel) + "s" + std::to_string(k.stride);
      const Tensor x = f[p + ".x"];
      expect_close(avg_pool2d(x, k.kernel, k.stride), f[c + ".out"], tol(p), c + " out");
      expect_close(avg_pool2d_backward(f[c + ".grad_out"], x.shape(), k.kernel, k.stride), f[c + ".grad_x"], tol(p),
                   c + " grad_x");
    }
}

TEST(GoldenImageOps, Conv2d) {
  const golden::Fixture f = load("conv2d");
  struct Case {
    const char* name;
    Conv2dParams params;
    bool bias;
  };
  const Case cases[] = {{"same3x3", {1, 1, 1, 1, 1, 1, 1}, true},
                        {"stride2", {2, 2, 1, 1, 1, 1, 1}, true},
                        {"dilated_groups", {1, 1, 2, 1, 2, 2, 2}, true},
                        {"pointwise", {}, false}};
  for (const std::string p : kPrefixes)
    for (const Case& k : cases) {
      const std::string c = p + "." + k.name;
      const Tensor x = f[p + ".x"], w = f[c + ".weight"], b = k.bias ? f[c + ".bias"] : Tensor();
      expect_close(conv2d(x, w, b, k.params), f[c + ".out"], tol(p), c + " out");
      const Conv2dBackward g = conv2d_backward(f[c + ".grad_out"], x, w, k.params, {true, true, k.bias});
      expect_close(g.grad_input, f[c + ".grad_x"], tol(p), c + " grad_x");
      expect_close(g.grad_weight, f[c + ".grad_weight"], tol(p), c + " grad_weight");
      if (k.bias) expect_close(g.grad_bias, f[c + ".grad_bias"], tol(p), c + " grad_bias");
    }
}

TEST(GoldenImageOps, GroupNorm) {
  const golden::Fixture f = load("group_norm");
  for (const std::string p : kPrefixes)
    for (int64_t groups : {2, 3}) {
      const std::string c = p + ".g" + std::to_string(groups);
      ag::Variable x(f[p + ".x"], true), w(f[c + ".weight"], true), b(f[c + ".bias"], true);
      const ag::Variable y = ag::group_norm(x, groups, w, b, 1e-5);
      expect_close(y.data(), f[c + ".out"], tol(p), c + " out");
      ag::backward(y, f[c + ".grad_out"]);
      expect_close(x.grad(), f[c + ".grad_x"], tol(p), c + " grad_x");
      expect_close(w.grad(), f[c + ".grad_weight"], tol(p), c + " grad_weight");
      expect_close(b.grad(), f[c + ".grad_bias"], tol(p), c + " grad_bias");
    }
}

}  // namespace
}  // namespace moh
