// The Conv2d and GroupNorm modules: PyTorch's default initialisation bounds and spread, parameter names
// and shapes, the forward equal to the ops they wrap, and input checks naming the layer.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/autograd.h"
#include "core/factory.h"
#include "core/ops.h"
#include "layers/conv2d.h"
#include "layers/norm.h"
#include "tests/core/nn_test_util.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using nn_test::expect_close;
using test::expect_error;

TEST(Conv2dLayer, InitialisesLikePyTorchAndRunsTheConvolution) {
  Generator gen(5);
  Conv2dOptions o;
  o.in_channels = 6, o.out_channels = 8, o.kernel_size = 3, o.stride = 2, o.padding = 1, o.groups = 2;
  const Conv2d conv(o, gen);
  const auto params = conv.named_parameters();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].first, "weight");
  EXPECT_EQ(params[0].second.shape(), (Shape{8, 3, 3, 3}));
  EXPECT_EQ(params[1].first, "bias");
  const double bound = 1.0 / std::sqrt(27.0);  // fan_in = 3 * 3 * 3
  const auto w = conv.weight().data().to_vector<double>();
  double sq = 0, max_abs = 0;
  for (double v : w) sq += v * v, max_abs = std::max(max_abs, std::abs(v));
  EXPECT_LE(max_abs, bound);
  EXPECT_NEAR(std::sqrt(sq / double(w.size())), bound / std::sqrt(3.0), 0.2 * bound / std::sqrt(3.0));
  for (double v : conv.bias().data().to_vector<double>()) EXPECT_LE(std::abs(v), bound);

  const Tensor x = uniform({2, 6, 7, 5}, -1.0, 1.0, gen);
  Conv2dParams p;
  p.stride_h = p.stride_w = 2, p.pad_h = p.pad_w = 1, p.groups = 2;
  expect_close(conv.forward(ag::Variable(x)).data(), conv2d(x, conv.weight().data(), conv.bias().data(), p), 0,
               "forward");
  EXPECT_EQ(conv.extra_repr(), "6, 8, kernel_size=3, stride=2, padding=1, groups=2");

  o.init = Conv2dOptions::Init::Zeros;
  o.bias = false;
  const Conv2d zero(o, gen);
  EXPECT_EQ(zero.named_parameters().size(), 1u);
  for (double v : zero.weight().data().to_vector<double>()) EXPECT_EQ(v, 0.0);
}

TEST(Conv2dLayer, RejectsOptionsAndInputsNamingTheLayer) {
  Generator gen(0);
  Conv2dOptions o;
  o.in_channels = 4, o.out_channels = 6, o.groups = 4;
  expect_error<Error>([&] { Conv2d c(o, gen); }, {"groups 4", "out_channels 6"});
  o.groups = 1, o.kernel_size = 0;
  expect_error<Error>([&] { Conv2d c(o, gen); }, {"kernel_size=0"});
  o.kernel_size = 3;
  const Conv2d conv(o, gen);
  expect_error<Error>([&] { conv.forward(ag::Variable(zeros({1, 3, 5, 5}))); }, {"Conv2d(4, 6", "[N, 4, H, W]"});
  expect_error<Error>([&] { conv.forward(ag::Variable(zeros({1, 4, 5, 5}, DType::Float64))); }, {"float32"});
}

TEST(GroupNormLayer, NormalisesEachGroupAndChecksItsInput) {
  GroupNormOptions o;
  o.groups = 2, o.channels = 4, o.eps = 1e-6;
  const GroupNorm norm(o);
  EXPECT_EQ(norm.named_parameters().size(), 2u);
  Generator gen(2);
  const Tensor x = uniform({3, 4, 2, 5}, -2.0, 2.0, gen);
  const Tensor y = norm.forward(ag::Variable(x)).data();
  // With weight 1 and bias 0 every (sample, group) slice has mean 0 and variance 1.
  const Tensor slices = y.reshape({6, 20});
  expect_close(mean(slices, {1}), std::vector<double>(6, 0.0), 0, "group means", 1e-5);
  const Tensor centred = slices;
  expect_close(mean(mul(centred, centred), {1}), std::vector<double>(6, 1.0), 1e-4, "group variances");
  expect_error<Error>([&] { norm.forward(ag::Variable(zeros({1, 3, 2, 2}))); }, {"GroupNorm(2, 4", "[N, 4, ...]"});
  o.groups = 3;
  expect_error<Error>([&] { GroupNorm bad(o); }, {"groups=3", "channels=4"});
}

}  // namespace
}  // namespace moh
