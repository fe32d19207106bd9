// Transforms against naive reference math: torch's bilinear interpolation (align_corners=False, no
// antialias) written out in double for crops, flips and resize + centre crop; RandomResizedCrop boxes
// (inside the image, within the scale/ratio ranges, torchvision's fallback), JPEG-reduction grids, and
// bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "data/image_transforms.h"
#include "tests/data/image_test_util.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using test::random_image;

// torch.nn.functional.interpolate(bilinear, align_corners=False, antialias=False) source taps of output o.
void taps(int64_t o, int64_t in, int64_t out, int64_t& i0, int64_t& i1, double& l) {
  const double src = std::max((double(o) + 0.5) * double(in) / double(out) - 0.5, 0.0);
  i0 = int64_t(std::floor(src));
  i1 = std::min(i0 + 1, in - 1);
  l = src - double(i0);
}

// Bilinear resize of img (or its crop `box`) to out_h x out_w, HWC doubles.
std::vector<double> ref_resize(const Image& img, const CropBox& box, int64_t out_h, int64_t out_w) {
  const int64_t c = img.channels;
  std::vector<double> out(size_t(out_h * out_w * c));
  auto px = [&](int64_t y, int64_t x, int64_t k) {
    return double(img.pixels[size_t(((box.top + y) * img.width + box.left + x) * c + k)]);
  };
  for (int64_t oy = 0; oy < out_h; ++oy)
    for (int64_t ox = 0; ox < out_w; ++ox) {
      int64_t y0, y1, x0, x1;
      double ly, lx;
      taps(oy, box.height, out_h, y0, y1, ly);
      taps(ox, box.width, out_w, x0, x1, lx);
      for (int64_t k = 0; k < c; ++k)
        out[size_t((oy * out_w + ox) * c + k)] = (1 - ly) * ((1 - lx) * px(y0, x0, k) + lx * px(y0, x1, k)) +
                                                 ly * ((1 - lx) * px(y1, x0, k) + lx * px(y1, x1, k));
    }
  return out;
}

// out (float CHW, normalised) against reference HWC pixel values.
void expect_matches(const std::vector<float>& out, const std::vector<double>& ref, int64_t h, int64_t w,
                    int64_t c, const float* mean, const float* std, bool flip, const std::string& what) {
  double worst = 0;
  for (int64_t k = 0; k < c; ++k)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        const double want =
            (ref[size_t((y * w + (flip ? w - 1 - x : x)) * c + k)] / 255.0 - mean[k]) / std[k];
        worst = std::max(worst, std::abs(double(out[size_t((k * h + y) * w + x)]) - want));
      }
  EXPECT_LT(worst, 2e-5) << what;
}

const float kMean[3] = {0.485f, 0.456f, 0.406f}, kStd[3] = {0.229f, 0.224f, 0.225f};

std::vector<float> run(const Image& img, const SampleGrid& grid, int64_t h, int64_t w, bool flip,
                       const float* mean = kMean, const float* std = kStd) {
  std::vector<float> out(size_t(img.channels * h * w), -1e9f);
  resample_normalize(img, grid, h, w, flip, mean, std, out.data());
  return out;
}

TEST(ImageTransforms, Uniform01IsDeterministicInRangeAndAdvances) {
  Generator a(42), b(42);
  double sum = 0;
  for (int i = 0; i < 20000; ++i) {
    const double u = uniform01(a);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    EXPECT_EQ(u, uniform01(b));
    sum += u;
  }
  EXPECT_EQ(a.offset(), 20000u);
  EXPECT_NEAR(sum / 20000, 0.5, 0.01);
  Generator c(43), d(42);
  EXPECT_NE(uniform01(c), uniform01(d));
}

TEST(ImageTransforms, CropResizeMatchesTorchBilinear) {
  const float one[1] = {0.5f}, half[1] = {0.25f};
  for (int64_t c : {1, 3}) {
    const Image img = random_image(23, 31, c, uint32_t(c));
    const float* mean = c == 3 ? kMean : one;
    const float* std = c == 3 ? kStd : half;
    for (const CropBox box :
         {CropBox{0, 0, 23, 31}, CropBox{3, 5, 17, 9}, CropBox{20, 28, 3, 3}, CropBox{0, 30, 23, 1}})
      for (const auto& [h, w] : std::vector<std::pair<int64_t, int64_t>>{{8, 8}, {16, 5}, {40, 33}, {1, 1}})
        for (bool flip : {false, true}) {
          const auto out = run(img, crop_resize_grid(box, h, w), h, w, flip, mean, std);
          expect_matches(out, ref_resize(img, box, h, w), h, w, c, mean, std, flip,
                         "box " + std::to_string(box.top) + "," + std::to_string(box.left) + " " +
                             std::to_string(box.height) + "x" + std::to_string(box.width) + " -> " +
                             std::to_string(h) + "x" + std::to_string(w) + (flip ? " flipped" : ""));
        }
  }
}

TEST(ImageTransforms, KnownBilinearValuesFlipAndConstants) {
  Image img;
  img.height = img.width = 2;
  img.channels = 1;
  img.pixels = {0, 100, 200, 255};
  const float zero[1] = {0}, unit[1] = {1.0f / 255};  // output = pixel value
  const auto out = run(img, crop_resize_grid({0, 0, 2, 2}, 4, 4), 4, 4, false, zero, unit);
  const std::vector<float> want = {0,   25,        75,        100,     50,  72.1875f, 116.5625f, 138.75f,
                                   150, 166.5625f, 199.6875f, 216.25f, 200, 213.75f,  241.25f,   255};
  for (size_t i = 0; i < 16; ++i) EXPECT_NEAR(out[i], want[i], 1e-3) << i;
  // A flip mirrors every row exactly.
  const Image rgb = random_image(9, 14, 3, 5);
  const SampleGrid grid = crop_resize_grid({1, 2, 7, 11}, 6, 10);
  const auto plain = run(rgb, grid, 6, 10, false), flipped = run(rgb, grid, 6, 10, true);
  for (int64_t k = 0; k < 3; ++k)
    for (int64_t y = 0; y < 6; ++y)
      for (int64_t x = 0; x < 10; ++x)
        EXPECT_EQ(flipped[size_t((k * 6 + y) * 10 + x)], plain[size_t((k * 6 + y) * 10 + 9 - x)]);
  // A constant image stays constant at any scale and crop.
  Image flat;
  flat.height = 13;
  flat.width = 7;
  flat.channels = 3;
  for (int i = 0; i < 13 * 7; ++i) flat.pixels.insert(flat.pixels.end(), {17, 130, 250});
  const float level[3] = {17, 130, 250};
  for (const SampleGrid& g : {crop_resize_grid({2, 1, 5, 6}, 5, 5), resize_center_crop_grid(13, 7, 9, 5)}) {
    const auto o = run(flat, g, 5, 5, true);
    for (int64_t k = 0; k < 3; ++k)
      for (int64_t i = 0; i < 25; ++i)
        EXPECT_NEAR(o[size_t(k * 25 + i)], (level[k] / 255 - kMean[k]) / kStd[k], 1e-5);
  }
}

TEST(ImageTransforms, ResizeCenterCropMatchesTwoSteps) {
  // {height, width, resize, size}: landscape, portrait, square, and offsets that round half to even.
  const std::vector<std::array<int64_t, 4>> cases = {{13, 20, 9, 8}, {20, 13, 9, 8},   {10, 10, 12, 9},
                                                     {7, 30, 7, 6},  {32, 32, 32, 28}, {300, 451, 256, 224}};
  for (const auto& [h, w, resize, size] : cases) {
    const Image img = random_image(h, w, 3, uint32_t(h * w));
    const int64_t new_h = h <= w ? resize : int64_t(double(resize * h) / double(w));
    const int64_t new_w = h <= w ? int64_t(double(resize * w) / double(h)) : resize;
    const std::vector<double> resized = ref_resize(img, {0, 0, h, w}, new_h, new_w);
    const int64_t top = int64_t(std::nearbyint(double(new_h - size) / 2)),
                  left = int64_t(std::nearbyint(double(new_w - size) / 2));
    std::vector<double> crop;
    for (int64_t y = 0; y < size; ++y)
      for (int64_t x = 0; x < size; ++x)
        for (int64_t k = 0; k < 3; ++k)
          crop.push_back(resized[size_t(((top + y) * new_w + left + x) * 3 + k)]);
    expect_matches(run(img, resize_center_crop_grid(h, w, resize, size), size, size, false), crop, size, size,
                   3, kMean, kStd, false, std::to_string(h) + "x" + std::to_string(w));
  }
  // (13 - 8) / 2 = 2.5 rounds to 2, as Python's round does.
  const SampleGrid g = resize_center_crop_grid(13, 20, 9, 8);
  EXPECT_DOUBLE_EQ(g.x.start, (2 + 0.5) * 20.0 / 13 - 0.5);
  test::expect_error([] { resize_center_crop_grid(10, 10, 7, 8); }, {"resize >= size"});
}

TEST(ImageTransforms, RandomResizedCropBoxes) {
  const std::array<double, 2> scale{0.08, 1.0}, ratio{3.0 / 4, 4.0 / 3};
  for (const auto& [h, w] :
       std::vector<std::pair<int64_t, int64_t>>{{224, 224}, {375, 500}, {31, 7}, {1, 1}}) {
    int64_t full = 0;
    for (uint64_t seed = 0; seed < 300; ++seed) {
      Generator gen(seed);
      const CropBox b = random_resized_crop_box(h, w, scale, ratio, gen);
      ASSERT_GE(b.top, 0);
      ASSERT_GE(b.left, 0);
      ASSERT_GE(b.height, 1);
      ASSERT_GE(b.width, 1);
      ASSERT_LE(b.top + b.height, h);
      ASSERT_LE(b.left + b.width, w);
      if (b.height == h && b.width == w) ++full;
      if (h >= 224) {  // large images: a successful try, within the ranges up to rounding
        const double area = double(b.height * b.width) / double(h * w),
                     r = double(b.width) / double(b.height);
        EXPECT_GE(area, 0.08 * 0.95);
        EXPECT_LE(r, 4.0 / 3 * 1.02);
        EXPECT_GE(r, 3.0 / 4 / 1.02);
      }
      Generator again(seed);
      const CropBox b2 = random_resized_crop_box(h, w, scale, ratio, again);
      EXPECT_EQ(b.top, b2.top);
      EXPECT_EQ(b.width, b2.width);
    }
    if (h == 1) {
      EXPECT_EQ(full, 300);
    }
  }
  // No try can fit a 1000x10 strip: torchvision's fallback, the centre crop with the ratio clamped.
  Generator gen(1);
  const CropBox wide = random_resized_crop_box(10, 1000, scale, ratio, gen);
  EXPECT_EQ(wide.height, 10);
  EXPECT_EQ(wide.width, 13);
  EXPECT_EQ(wide.left, (1000 - 13) / 2);
  EXPECT_EQ(wide.top, 0);
  const CropBox tall = random_resized_crop_box(1000, 10, scale, ratio, gen);
  EXPECT_EQ(tall.width, 10);
  EXPECT_EQ(tall.height, 13);
  EXPECT_EQ(tall.top, (1000 - 13) / 2);
  EXPECT_EQ(gen.offset(), 40u);  // 10 tries of 2 draws each, twice
  // Fixed area and ratio: every position 0..8 of an 8x8 box in 16x16 appears, nothing outside.
  std::set<int64_t> tops, lefts;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    Generator g(seed);
    const CropBox b = random_resized_crop_box(16, 16, {0.25, 0.25}, {1, 1}, g);
    EXPECT_EQ(b.height, 8);
    EXPECT_EQ(b.width, 8);
    tops.insert(b.top);
    lefts.insert(b.left);
  }
  EXPECT_EQ(tops.size(), 9u);
  EXPECT_EQ(*tops.rbegin(), 8);
  EXPECT_EQ(lefts.size(), 9u);
  test::expect_error(
      [&] {
        random_resized_crop_box(8, 8, {0.5, 0.1}, ratio, gen);
      },
      {"scale[0] <= scale[1]"});
  test::expect_error([&] { random_resized_crop_box(8, 8, scale, {0, 1}, gen); }, {"0 < ratio[0]"});
  test::expect_error([&] { random_resized_crop_box(0, 8, scale, ratio, gen); }, {"empty image"});
}

TEST(ImageTransforms, ReductionGrids) {
  EXPECT_EQ(max_reduction(crop_resize_grid({0, 0, 64, 64}, 8, 8)), 8);
  EXPECT_EQ(max_reduction(crop_resize_grid({0, 0, 64, 200}, 8, 8)), 8);
  EXPECT_EQ(max_reduction(crop_resize_grid({0, 0, 31, 64}, 8, 8)), 2);
  EXPECT_EQ(max_reduction(crop_resize_grid({0, 0, 16, 16}, 8, 8)), 2);
  EXPECT_EQ(max_reduction(crop_resize_grid({0, 0, 15, 64}, 8, 8)), 1);
  EXPECT_EQ(max_reduction(resize_center_crop_grid(500, 375, 256, 224)), 1);
  EXPECT_EQ(max_reduction(resize_center_crop_grid(2000, 1500, 256, 224)), 4);
  // Reduction 1 is the identity; on a 2x2 block-averaged image (what DCT scaling approximates) a smooth
  // image resamples to nearly the same values.
  const SampleGrid grid = crop_resize_grid({4, 6, 40, 36}, 9, 9);
  const SampleGrid same = reduce_grid(grid, 1, 48, 48);
  EXPECT_DOUBLE_EQ(same.y.start, grid.y.start);
  EXPECT_DOUBLE_EQ(same.x.hi, grid.x.hi);
  Image full, half;
  full.height = full.width = 48;
  full.channels = half.channels = 1;
  for (int y = 0; y < 48; ++y)
    for (int x = 0; x < 48; ++x)
      full.pixels.push_back(uint8_t(100 + 50 * std::sin(0.1 * x) + 40 * std::cos(0.13 * y)));
  half.height = half.width = 24;
  for (int y = 0; y < 24; ++y)
    for (int x = 0; x < 24; ++x) {
      const auto at = [&](int yy, int xx) { return int(full.pixels[size_t(yy * 48 + xx)]); };
      half.pixels.push_back(uint8_t(
          (at(2 * y, 2 * x) + at(2 * y + 1, 2 * x) + at(2 * y, 2 * x + 1) + at(2 * y + 1, 2 * x + 1) + 2) /
          4));
    }
  const float zero[1] = {0}, unit[1] = {1.0f / 255};
  const auto a = run(full, grid, 9, 9, false, zero, unit),
             b = run(half, reduce_grid(grid, 2, 24, 24), 9, 9, false, zero, unit);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 3.0) << i;
  const SampleGrid r = reduce_grid(crop_resize_grid({0, 0, 17, 17}, 2, 2), 8, 3, 3);
  EXPECT_GE(r.y.lo, 0.0);
  EXPECT_LE(r.y.hi, 2.0);
}

TEST(ImageTransforms, BadArguments) {
  Image img = random_image(4, 4, 3, 0);
  std::vector<float> out(48);
  const SampleGrid grid = crop_resize_grid({0, 0, 4, 4}, 4, 4);
  const float bad_std[3] = {0.2f, 0.0f, 0.2f};
  test::expect_error([&] { resample_normalize(img, grid, 4, 4, false, kMean, bad_std, out.data()); },
                     {"std[1]"});
  img.channels = 2;
  test::expect_error([&] { resample_normalize(img, grid, 4, 4, false, kMean, kStd, out.data()); },
                     {"1 or 3 channels"});
  img.channels = 3;
  img.pixels.pop_back();
  test::expect_error([&] { resample_normalize(img, grid, 4, 4, false, kMean, kStd, out.data()); },
                     {"bad image"});
  test::expect_error([] { crop_resize_grid({0, 0, 0, 4}, 4, 4); }, {"empty crop"});
}

}  // namespace
}  // namespace moh
