// upsample_nearest2d / avg_pool2d and their backward on the CPU: hand-computed small cases (scale
// 1, 2, 3; pooling 2/2, 3/2 overlapping, 3/1, 1/2 with gaps, floor-mode leftovers, non-square),
// empty batches and every argument check. Each backward against its forward (gradcheck), float32,
// strided inputs and upstream gradients, thread-count independence and CUDA parity: the op table's
// upsample_nearest2d and avg_pool2d entries (tests/core/op_table.cpp).
#include <gtest/gtest.h>

#include "core/factory.h"
#include "core/ops.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using test::expect_error;

// [1, 1, h, w] float64 image holding 0, 1, 2, ... in row-major order.
Tensor ramp(int64_t h, int64_t w) { return arange(h * w, DType::Float64).view({1, 1, h, w}); }

Tensor image(const std::vector<double>& v, int64_t h, int64_t w) { return from_vector<double>(v, {1, 1, h, w}); }

void expect_values(const Tensor& t, const Shape& shape, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(t.shape(), shape) << what;
  EXPECT_EQ(t.to_vector<double>(), want) << what;
}

TEST(Resample, UpsampleByHand) {
  const Tensor x = image({1, 2, 3, 4}, 2, 2);
  expect_values(upsample_nearest2d(x, 1), {1, 1, 2, 2}, {1, 2, 3, 4}, "scale 1");
  expect_values(upsample_nearest2d(x, 2), {1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, "scale 2");
  expect_values(upsample_nearest2d(x, 3), {1, 1, 6, 6},
                {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4},
                "scale 3");
  // Non-square, two planes: each plane upsampled on its own.
  const Tensor two = from_vector<double>({5, 7, -1, 0}, {1, 2, 1, 2});
  expect_values(upsample_nearest2d(two, 2), {1, 2, 2, 4}, {5, 5, 7, 7, 5, 5, 7, 7, -1, -1, 0, 0, -1, -1, 0, 0},
                "two planes");
}

TEST(Resample, UpsampleBackwardByHand) {
  expect_values(upsample_nearest2d_backward(ramp(4, 4), 2), {1, 1, 2, 2}, {10, 18, 42, 50}, "scale 2");
  expect_values(upsample_nearest2d_backward(ramp(3, 6), 3), {1, 1, 1, 2}, {0 + 1 + 2 + 6 + 7 + 8 + 12 + 13 + 14,
                                                                          3 + 4 + 5 + 9 + 10 + 11 + 15 + 16 + 17},
                "scale 3");
  expect_values(upsample_nearest2d_backward(ramp(2, 3), 1), {1, 1, 2, 3}, {0, 1, 2, 3, 4, 5}, "scale 1");
}

TEST(Resample, AvgPoolByHand) {
  expect_values(avg_pool2d(ramp(4, 4), 2, 2), {1, 1, 2, 2}, {2.5, 4.5, 10.5, 12.5}, "2/2");
  // A ramp's 3 x 3 window mean is its centre value.
  expect_values(avg_pool2d(ramp(5, 5), 3, 2), {1, 1, 2, 2}, {6, 8, 16, 18}, "3/2 overlapping");
  expect_values(avg_pool2d(ramp(4, 4), 3, 1), {1, 1, 2, 2}, {5, 6, 9, 10}, "3/1");
  expect_values(avg_pool2d(ramp(4, 5), 3, 2), {1, 1, 1, 2}, {6, 8}, "3/2 floor mode, non-square");
  expect_values(avg_pool2d(ramp(3, 3), 1, 2), {1, 1, 2, 2}, {0, 2, 6, 8}, "1/2 (gaps)");
  expect_values(avg_pool2d(ramp(3, 3), 3, 3), {1, 1, 1, 1}, {4}, "whole plane");
}

TEST(Resample, AvgPoolBackwardByHand) {
  // grad_out 9 in every window of 3/2 on 5 x 5: grad_x counts the windows covering each element.
  const std::vector<double> cover{1, 1, 2, 1, 1};
  std::vector<double> counts;
  for (double r : cover)
    for (double c : cover) counts.push_back(r * c);
  expect_values(avg_pool2d_backward(full({1, 1, 2, 2}, 9.0, DType::Float64), {1, 1, 5, 5}, 3, 2), {1, 1, 5, 5},
                counts, "3/2 overlapping");
  expect_values(avg_pool2d_backward(image({1, 2, 3, 4}, 2, 2), {1, 1, 3, 3}, 1, 2), {1, 1, 3, 3},
                {1, 0, 2, 0, 0, 0, 3, 0, 4}, "1/2: gaps get 0");
  expect_values(avg_pool2d_backward(image({4}, 1, 1), {1, 1, 3, 3}, 2, 2), {1, 1, 3, 3},
                {1, 1, 0, 1, 1, 0, 0, 0, 0}, "2/2 floor mode: the leftover row and column get 0");
  expect_values(avg_pool2d_backward(image({9, 18, 27, 36}, 2, 2), {1, 1, 4, 4}, 3, 1), {1, 1, 4, 4},
                {1, 3, 3, 2, 4, 10, 10, 6, 4, 10, 10, 6, 3, 7, 7, 4}, "3/1");
}

TEST(Resample, EmptyBatch) {
  const Tensor x = zeros({0, 3, 4, 4});
  EXPECT_EQ(upsample_nearest2d(x, 2).shape(), (Shape{0, 3, 8, 8}));
  EXPECT_EQ(upsample_nearest2d_backward(x, 2).shape(), (Shape{0, 3, 2, 2}));
  EXPECT_EQ(avg_pool2d(x, 3, 1).shape(), (Shape{0, 3, 2, 2}));
  EXPECT_EQ(avg_pool2d_backward(zeros({2, 0, 2, 2}), {2, 0, 4, 4}, 2, 2).shape(), (Shape{2, 0, 4, 4}));
}

TEST(Resample, RejectsBadArguments) {
  const Tensor x = zeros({1, 2, 4, 5});
  auto up = [](const Tensor& t, int64_t s) { return [=] { upsample_nearest2d(t, s); }; };
  auto up_back = [](const Tensor& t, int64_t s) { return [=] { upsample_nearest2d_backward(t, s); }; };
  auto pool = [](const Tensor& t, int64_t k, int64_t s) { return [=] { avg_pool2d(t, k, s); }; };
  auto pool_back = [](const Tensor& g, const Shape& in, int64_t k, int64_t s) {
    return [=] { avg_pool2d_backward(g, in, k, s); };
  };
  expect_error(up(Tensor(), 2), {"upsample_nearest2d: input is an undefined tensor"});
  expect_error(up(zeros({2, 4, 5}), 2), {"upsample_nearest2d: expected input of 4 dims [N, C, H, W]", "[2, 4, 5]"});
  expect_error(up(arange(20).view({1, 1, 4, 5}), 2), {"upsample_nearest2d: expected input to be float32 or float64",
                                                       "int64"});
  expect_error(up(zeros({1, 2, 0, 5}), 2), {"upsample_nearest2d: expected input with H and W >= 1", "[1, 2, 0, 5]"});
  expect_error(up(x, 0), {"upsample_nearest2d: scale must be >= 1, got 0"});
  expect_error(up(x, int64_t(1) << 40), {"upsample_nearest2d: scale 1099511627776 makes the output", "too large"});

  expect_error(up_back(x, 2), {"upsample_nearest2d_backward: grad_out", "[1, 2, 4, 5]",
                               "is not an upsampling by 2"});
  expect_error(up_back(x, -1), {"upsample_nearest2d_backward: scale must be >= 1, got -1"});
  expect_error(up_back(zeros({4, 4}), 2), {"upsample_nearest2d_backward: expected grad_out of 4 dims"});
  expect_error(up_back(zeros({1, 1, 4, 4}, DType::Int32), 2),
               {"upsample_nearest2d_backward: expected grad_out to be float32 or float64"});

  expect_error(pool(x, 0, 1), {"avg_pool2d: kernel must be >= 1, got 0"});
  expect_error(pool(x, 2, 0), {"avg_pool2d: stride must be >= 1, got 0"});
  expect_error(pool(x, 5, 1), {"avg_pool2d: kernel 5 is larger than the input's H x W of [1, 2, 4, 5]"});
  expect_error(pool(zeros({1, 2, 6, 3}), 4, 1), {"avg_pool2d: kernel 4 is larger", "[1, 2, 6, 3]"});
  expect_error(pool(zeros({1, 1, 2, 4, 5}), 2, 2), {"avg_pool2d: expected input of 4 dims"});
  expect_error(pool(zeros({1, 1, 4, 4}, DType::Bool), 2, 2), {"avg_pool2d: expected input to be float32 or float64"});

  expect_error(pool_back(zeros({1, 2, 2, 3}), {1, 2, 4, 5}, 2, 2),
               {"avg_pool2d_backward: grad_out", "[1, 2, 2, 3]", "does not match the [1, 2, 2, 2] output of pooling "
                                                                 "[1, 2, 4, 5] with kernel 2 and stride 2"});
  expect_error(pool_back(zeros({1, 2, 2, 2}), {2, 4, 5}, 2, 2),
               {"avg_pool2d_backward: expected input_shape [N, C, H, W] with H and W >= 1, got [2, 4, 5]"});
  expect_error(pool_back(zeros({1, 2, 2, 2}), {1, -2, 4, 5}, 2, 2), {"avg_pool2d_backward: expected input_shape"});
  expect_error(pool_back(zeros({1, 2, 1, 1}), {1, 2, 4, 5}, 5, 1), {"avg_pool2d_backward: kernel 5 is larger"});
  expect_error(pool_back(zeros({1, 2, 2, 2}), {1, 2, 4, 5}, 2, 0), {"avg_pool2d_backward: stride must be >= 1"});
  expect_error(pool_back(zeros({1, 2, 2, 2}, DType::Int64), {1, 2, 4, 4}, 2, 2),
               {"avg_pool2d_backward: expected grad_out to be float32 or float64"});
}

}  // namespace
}  // namespace moh
