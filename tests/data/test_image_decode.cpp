// JPEG/PNG codecs: PNG round trips exactly and JPEG within tolerance, grey <-> RGB conversion against the
// luma formula, PNG palettes, 16-bit samples and alpha, Adobe CMYK JPEGs, DCT-scaled (reduced) decodes,
// and every corrupt input (truncated, garbage, empty, missing) throwing an Error that names the file.
#include <gtest/gtest.h>
#include <jpeglib.h>
#include <png.h>

#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <random>

#include "data/image_decode.h"
#include "tests/data/image_test_util.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using test::make_image;
using test::random_image;

// Smooth content (gradients and a low-frequency wave) that JPEG keeps well.
Image smooth_image(int64_t h, int64_t w, int64_t c) {
  return make_image(h, w, c, [](int64_t y, int64_t x, int64_t k) {
    return uint8_t(std::lround(127.5 + 60.0 * std::sin(0.15 * double(x) + 0.9 * double(k)) + 50.0 * std::cos(0.11 * double(y))));
  });
}

uint8_t luma_ref(double r, double g, double b) {
  return uint8_t(std::floor((19595.0 * r + 38470.0 * g + 7471.0 * b) / 65536.0 + 0.5));
}

// Largest and mean absolute pixel difference.
std::pair<int, double> diff(const Image& a, const Image& b) {
  EXPECT_EQ(a.pixels.size(), b.pixels.size());
  int worst = 0;
  double sum = 0;
  for (size_t i = 0; i < std::min(a.pixels.size(), b.pixels.size()); ++i) {
    const int d = std::abs(int(a.pixels[i]) - int(b.pixels[i]));
    worst = std::max(worst, d);
    sum += d;
  }
  return {worst, sum / double(std::max<size_t>(a.pixels.size(), 1))};
}

Image decode(const std::vector<uint8_t>& bytes, int64_t channels, const ReductionFn& fn = {}) {
  return decode_image(bytes.data(), bytes.size(), channels, "memory", fn);
}

// A PNG written by libpng's simplified API in `format` (buffer layout as png.h describes it).
std::vector<uint8_t> simplified_png(uint32_t w, uint32_t h, uint32_t format, const void* buffer,
                                    const void* colormap = nullptr, uint32_t colormap_entries = 0) {
  png_image desc{};
  desc.version = PNG_IMAGE_VERSION;
  desc.width = w;
  desc.height = h;
  desc.format = format;
  desc.colormap_entries = colormap_entries;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&desc, nullptr, &size, 0, buffer, 0, colormap)) << desc.message;
  std::vector<uint8_t> out(size);
  EXPECT_TRUE(png_image_write_to_memory(&desc, out.data(), &size, 0, buffer, 0, colormap)) << desc.message;
  out.resize(size);
  png_image_free(&desc);
  return out;
}

using ImageDecode = test::TempDirTest;

TEST_F(ImageDecode, PngRoundTripIsExact) {
  for (int64_t c : {1, 3}) {
    const Image img = random_image(7, 13, c, uint32_t(c));
    const std::vector<uint8_t> bytes = encode_png(img);
    EXPECT_EQ(sniff_image_format(bytes.data(), bytes.size(), "x"), ImageFormat::Png);
    const Image back = decode(bytes, c);
    EXPECT_EQ(back.height, 7);
    EXPECT_EQ(back.width, 13);
    EXPECT_EQ(back.channels, c);
    EXPECT_EQ(back.reduction, 1);
    EXPECT_EQ(back.pixels, img.pixels) << c << " channels";
  }
}

TEST_F(ImageDecode, JpegRoundTripWithinTolerance) {
  for (int64_t c : {1, 3}) {
    const Image img = smooth_image(37, 45, c);
    const std::vector<uint8_t> bytes = encode_jpeg(img, 95);
    EXPECT_EQ(sniff_image_format(bytes.data(), bytes.size(), "x"), ImageFormat::Jpeg);
    const Image back = decode(bytes, c);
    ASSERT_EQ(back.height, 37);
    ASSERT_EQ(back.width, 45);
    const auto [worst, mean] = diff(back, img);
    EXPECT_LE(worst, c == 1 ? 4 : 24) << c << " channels";  // 4:2:0 chroma costs colour detail
    EXPECT_LT(mean, c == 1 ? 1.0 : 3.0) << c << " channels";
  }
  // Noise at quality 100 (the largest output) fits the encoder's fixed buffer.
  for (int64_t c : {1, 3}) {
    const Image noise = random_image(33, 47, c, 9);
    EXPECT_EQ(decode(encode_jpeg(noise, 100), c).pixels.size(), noise.pixels.size());
  }
  // Lower quality: a smaller file, still close.
  const Image img = smooth_image(64, 64, 3);
  EXPECT_LT(encode_jpeg(img, 30).size(), encode_jpeg(img, 95).size());
  EXPECT_LT(diff(decode(encode_jpeg(img, 30), 3), img).second, 6.0);
}

TEST_F(ImageDecode, GreyAndRgbConversion) {
  const Image rgb = random_image(5, 6, 3, 7);
  const Image grey = decode(encode_png(rgb), 1);
  ASSERT_EQ(grey.channels, 1);
  for (int64_t i = 0; i < 30; ++i) {
    const uint8_t* p = &rgb.pixels[size_t(i * 3)];
    EXPECT_EQ(grey.pixels[size_t(i)], luma_ref(p[0], p[1], p[2])) << "pixel " << i;
  }
  const Image g = random_image(4, 9, 1, 8);
  const Image expanded = decode(encode_png(g), 3);
  ASSERT_EQ(expanded.channels, 3);
  for (int64_t i = 0; i < 36; ++i)
    for (int k = 0; k < 3; ++k) EXPECT_EQ(expanded.pixels[size_t(i * 3 + k)], g.pixels[size_t(i)]);
  // JPEG: grey files replicate exactly; colour files give the luma of the colour decode (libjpeg takes Y).
  const Image smooth_grey = smooth_image(16, 16, 1);
  const std::vector<uint8_t> grey_jpeg = encode_jpeg(smooth_grey, 90);
  const Image g1 = decode(grey_jpeg, 1), g3 = decode(grey_jpeg, 3);
  for (int64_t i = 0; i < 256; ++i)
    for (int k = 0; k < 3; ++k) EXPECT_EQ(g3.pixels[size_t(i * 3 + k)], g1.pixels[size_t(i)]);
  const std::vector<uint8_t> colour_jpeg = encode_jpeg(smooth_image(16, 16, 3), 90);
  const Image c3 = decode(colour_jpeg, 3), c1 = decode(colour_jpeg, 1);
  for (int64_t i = 0; i < 256; ++i) {
    const uint8_t* p = &c3.pixels[size_t(i * 3)];
    EXPECT_NEAR(c1.pixels[size_t(i)], luma_ref(p[0], p[1], p[2]), 2) << "pixel " << i;
  }
}

TEST_F(ImageDecode, PngPaletteSixteenBitAndAlpha) {
  // Palette: indices into an RGB colour map.
  const uint8_t colormap[4 * 3] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30};
  const uint8_t indices[6] = {0, 1, 2, 3, 2, 1};
  const Image pal = decode(simplified_png(3, 2, PNG_FORMAT_RGB_COLORMAP, indices, colormap, 4), 3);
  ASSERT_EQ(pal.pixels.size(), 18u);
  for (int i = 0; i < 6; ++i)
    for (int k = 0; k < 3; ++k) EXPECT_EQ(pal.pixels[size_t(i * 3 + k)], colormap[indices[i] * 3 + k]);
  // 16-bit grey: the high byte of each sample.
  const uint16_t wide[4] = {0, 0x12ff, 0xab01, 0xffff};
  const Image w16 = decode(simplified_png(2, 2, PNG_FORMAT_LINEAR_Y, wide), 1);
  EXPECT_EQ(w16.pixels, (std::vector<uint8_t>{0x00, 0x12, 0xab, 0xff}));
  // RGBA and grey+alpha: the alpha channel is dropped, colour kept.
  const uint8_t rgba[8] = {1, 2, 3, 0, 200, 150, 100, 255};
  EXPECT_EQ(decode(simplified_png(2, 1, PNG_FORMAT_RGBA, rgba), 3).pixels,
            (std::vector<uint8_t>{1, 2, 3, 200, 150, 100}));
  EXPECT_EQ(decode(simplified_png(2, 1, PNG_FORMAT_RGBA, rgba), 1).pixels,
            (std::vector<uint8_t>{luma_ref(1, 2, 3), luma_ref(200, 150, 100)}));
  const uint8_t ga[4] = {77, 0, 99, 128};
  EXPECT_EQ(decode(simplified_png(2, 1, PNG_FORMAT_GA, ga), 3).pixels,
            (std::vector<uint8_t>{77, 77, 77, 99, 99, 99}));
}

TEST_F(ImageDecode, AdobeCmykJpeg) {
  const int w = 16, h = 8;
  std::vector<uint8_t> cmyk;
  for (int i = 0; i < w * h; ++i) cmyk.insert(cmyk.end(), {200, 120, 40, 230});  // flat: no DCT error
  const std::vector<uint8_t> jpeg = test::libjpeg_encode(cmyk.data(), w, h, 4, JCS_CMYK, false, 100);
  const Image rgb = decode(jpeg, 3), grey = decode(jpeg, 1);
  ASSERT_EQ(rgb.pixels.size(), size_t(w * h * 3));
  const double r = 200.0 * 230 / 255, g = 120.0 * 230 / 255, b = 40.0 * 230 / 255;  // inverted: v * k / 255
  for (int i = 0; i < w * h; ++i) {
    EXPECT_NEAR(rgb.pixels[size_t(i * 3)], r, 2);
    EXPECT_NEAR(rgb.pixels[size_t(i * 3 + 1)], g, 2);
    EXPECT_NEAR(rgb.pixels[size_t(i * 3 + 2)], b, 2);
    EXPECT_NEAR(grey.pixels[size_t(i)], luma_ref(r, g, b), 2);
  }
}

TEST_F(ImageDecode, ReducedJpegDecode) {
  const Image img = smooth_image(64, 48, 3);
  const std::vector<uint8_t> bytes = encode_jpeg(img, 95);
  const Image full = decode(bytes, 3);
  for (int64_t r : {1, 2, 4, 8}) {
    int64_t seen_h = 0, seen_w = 0;
    const Image small = decode(bytes, 3, [&](int64_t hh, int64_t ww) {
      seen_h = hh;
      seen_w = ww;
      return r;
    });
    EXPECT_EQ(seen_h, 64);
    EXPECT_EQ(seen_w, 48);
    EXPECT_EQ(small.reduction, r);
    ASSERT_EQ(small.height, 64 / r);
    ASSERT_EQ(small.width, 48 / r);
    // Each reduced pixel is about the mean of its r x r block of the full decode.
    double worst = 0;
    for (int64_t y = 0; y < small.height; ++y)
      for (int64_t x = 0; x < small.width; ++x)
        for (int64_t k = 0; k < 3; ++k) {
          double sum = 0;
          for (int64_t dy = 0; dy < r; ++dy)
            for (int64_t dx = 0; dx < r; ++dx)
              sum += full.pixels[size_t(((y * r + dy) * 48 + x * r + dx) * 3 + k)];
          worst = std::max(
              worst, std::abs(sum / double(r * r) - small.pixels[size_t((y * small.width + x) * 3 + k)]));
        }
    EXPECT_LT(worst, 12.0) << "reduction " << r;
  }
  // Sizes that are not multiples round up; PNG ignores the reduction; other values are refused.
  const Image odd = decode(encode_jpeg(smooth_image(17, 9, 1), 90), 1, [](int64_t, int64_t) { return 4; });
  EXPECT_EQ(odd.height, 5);
  EXPECT_EQ(odd.width, 3);
  const Image png = decode(encode_png(img), 3, [](int64_t, int64_t) { return 8; });
  EXPECT_EQ(png.height, 64);
  EXPECT_EQ(png.reduction, 1);
  test::expect_error([&] { decode(bytes, 3, [](int64_t, int64_t) { return 3; }); }, {"reduction", "got 3"});
}

TEST_F(ImageDecode, CorruptFilesThrowNamingTheFile) {
  const Image img = smooth_image(40, 40, 3);
  const std::vector<uint8_t> jpeg = encode_jpeg(img, 90), png = encode_png(random_image(40, 40, 3, 1));
  auto write = [&](const std::string& name, std::vector<uint8_t> bytes) {
    const std::string p = path(name);
    write_file_bytes(p, bytes);
    return p;
  };
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {write("half.jpg", {jpeg.begin(), jpeg.begin() + long(jpeg.size() / 2)}), {"truncated", "JPEG"}},
      {write("header.jpg", {jpeg.begin(), jpeg.begin() + 20}), {"JPEG"}},
      {write("half.png", {png.begin(), png.begin() + long(png.size() / 2)}), {"truncated", "PNG"}},
      {write("sig.png", {png.begin(), png.begin() + 12}), {"PNG"}},
      {write("garbage.jpg", {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'}),
       {"not a JPEG or PNG", "68 65 6c"}},
      {write("empty.png", {}), {"not a JPEG or PNG", "empty"}},
  };
  for (const auto& [file, parts] : cases) {
    std::vector<std::string> expect = parts;
    expect.push_back(file);
    const std::string& p = file;  // a lambda cannot capture a structured binding before clang 16
    test::expect_error([&] { read_image(p, 3); }, expect);
  }
  // JPEG magic followed by noise; a PNG whose pixel data is damaged (CRC or zlib error).
  std::vector<uint8_t> noise = {0xff, 0xd8, 0xff};
  std::mt19937 rng(3);
  for (int i = 0; i < 500; ++i) noise.push_back(uint8_t(rng()));
  const std::string noisy = write("noise.jpg", noise);
  test::expect_error([&] { read_image(noisy, 3); }, {noisy, "JPEG"});
  std::vector<uint8_t> damaged = png;
  for (size_t i = damaged.size() / 2; i < damaged.size() / 2 + 16; ++i) damaged[i] ^= 0x5a;
  const std::string bad_png = write("damaged.png", damaged);
  test::expect_error([&] { read_image(bad_png, 1); }, {bad_png, "PNG"});
  test::expect_error([&] { read_image(path("missing.png"), 3); }, {"cannot open", path("missing.png")});
  test::expect_error([&] { read_image(dir_.string(), 3); }, {"not a regular file"});
  test::expect_error([&] { write_file_bytes(path("no/such/dir.png"), png); },
                     {"cannot create", "no/such/dir.png"});
}

TEST_F(ImageDecode, BadArguments) {
  const std::vector<uint8_t> png = encode_png(random_image(2, 2, 1, 0));
  test::expect_error([&] { decode(png, 2); }, {"channels must be 1 or 3", "got 2"});
  Image img = random_image(2, 2, 3, 0);
  test::expect_error([&] { encode_jpeg(img, 0); }, {"quality", "got 0"});
  test::expect_error([&] { encode_jpeg(img, 101); }, {"quality", "got 101"});
  img.channels = 4;
  test::expect_error([&] { encode_png(img); }, {"encode_png", "1 or 3 channels"});
  img.channels = 3;
  img.pixels.pop_back();
  test::expect_error([&] { encode_jpeg(img); }, {"encode_jpeg", "11 pixel bytes"});
  img.height = 0;
  test::expect_error([&] { encode_png(img); }, {"encode_png", "empty"});
}

}  // namespace
}  // namespace moh
