// image_grid and images_to_uint8_nhwc: the linear byte mapping (rounded, clipped, NaN to 0), the tile layout
// with its black gaps, and the NHWC order of the untiled bytes, which equal the one-image grid's pixels.
#include <gtest/gtest.h>

#include <cmath>

#include "core/factory.h"
#include "data/image_grid.h"
#include "tests/test_util.h"

namespace moh {
namespace {

TEST(ImageGrid, MapsValuesAndLaysOutTilesWithGaps) {
  // Two 1 x 1 x 2 grey images in [-1, 1]: -1 -> 0, 1 -> 255, 0 -> 128 (127.5 rounds to even), 2 clips.
  const Tensor images = from_vector<float>({-1, 1, 0, 2}, {2, 1, 1, 2});
  const Image grid = image_grid(images, 2, -1.0, 1.0, 1);
  EXPECT_EQ(grid.width, 2 * 2 + 3);
  EXPECT_EQ(grid.height, 1 + 2);
  EXPECT_EQ(grid.pixels, (std::vector<uint8_t>{0, 0, 0,   0, 0,   0,   0,  //
                                               0, 0, 255, 0, 128, 255, 0,  //
                                               0, 0, 0,   0, 0,   0,   0}));
  test::expect_error<Error>([&] { image_grid(images, 0, -1.0, 1.0); }, {"columns >= 1"});
}

TEST(ImageGrid, Uint8NhwcHoldsEachImagesGridBytes) {
  const Tensor images = from_vector<float>({0.0f, 0.5f, 1.0f, 0.25f, NAN, 0.75f}, {1, 3, 1, 2});
  const Tensor bytes = images_to_uint8_nhwc(images, 0.0, 1.0);
  EXPECT_EQ(bytes.shape(), (Shape{1, 1, 2, 3}));
  EXPECT_EQ(bytes.dtype(), DType::UInt8);
  EXPECT_EQ(bytes.to_vector<uint8_t>(), (std::vector<uint8_t>{0, 255, 0, 128, 64, 191}));
  EXPECT_EQ(bytes.to_vector<uint8_t>(), image_grid(images, 1, 0.0, 1.0, 0).pixels);
  test::expect_error<Error>([&] { images_to_uint8_nhwc(images, 1.0, 1.0); }, {"high > low"});
}

}  // namespace
}  // namespace moh
