// Golden tests of the image ops against PyTorch 1.13: fixtures made by
// tests/reference/make_image_op_fixtures.py (read via MOH_FIXTURE_DIR) hold the input, and per
// case the output, a fixed upstream gradient and torch autograd's grad_x. Forward and backward
// must match to 1e-5 relative in float32 and 1e-10 in float64 (nn_test_util.h's closeness rule).
#include <gtest/gtest.h>

#include <string>

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
  for (const char* family : {"upsample_nearest2d", "avg_pool2d"}) {
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

}  // namespace
}  // namespace moh
