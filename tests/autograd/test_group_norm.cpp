// ag::group_norm's argument checks: the input's rank, groups dividing the channels, and the
// weight and bias shapes, each error naming the offending value.
#include <gtest/gtest.h>

#include "autograd/autograd.h"
#include "tests/autograd/autograd_test_util.h"
#include "tests/test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;

TEST(GroupNorm, RejectsBadArgumentsNamingThem) {
  const Variable x = leaf({2, 6, 3, 3}, 1), w = leaf({6}, 2), b = leaf({6}, 3);
  test::expect_error([&] { group_norm(leaf({6}, 4), 2, Variable(), Variable()); },
                     {"group_norm", "expected the input as [N, C, ...]"});
  test::expect_error([&] { group_norm(x, 4, w, b); }, {"group_norm", "groups 4 must divide the 6 channels"});
  test::expect_error([&] { group_norm(x, 0, w, b); }, {"group_norm", "groups 0 must divide"});
  test::expect_error([&] { group_norm(x, 2, leaf({3}, 5), b); }, {"group_norm", "expected the weight and bias as [6]"});
  test::expect_error([&] { group_norm(x, 2, w, leaf({6, 1}, 6)); }, {"group_norm", "expected the weight and bias as [6]"});
}

TEST(GroupNorm, OneGroupPerChannelNormalisesEachChannelPlane) {
  const Variable x = leaf({2, 3, 4, 5}, 7);
  const std::vector<double> y = group_norm(x, 3, Variable(), Variable(), 0.0).data().to_vector<double>();
  for (size_t plane = 0; plane < 6; ++plane) {
    double mean = 0, square = 0;
    for (size_t i = 0; i < 20; ++i) mean += y[plane * 20 + i] / 20, square += y[plane * 20 + i] * y[plane * 20 + i] / 20;
    EXPECT_NEAR(mean, 0.0, 1e-12) << plane;
    EXPECT_NEAR(square, 1.0, 1e-9) << plane;
  }
}

}  // namespace
}  // namespace moh::ag
