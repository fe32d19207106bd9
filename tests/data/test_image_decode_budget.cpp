// decode_image's memory budget: the bytes a decode would allocate are counted from the header and an image
// over the budget throws before any pixel buffer exists, naming the file, its size, the cost and the
// budget. Covers a tiny file that claims a huge image (a compressed all-zero 16384 x 16384 PNG, inside the
// pixel cap), the exact cost of PNG (output, RGBA/grey expansion buffer, libpng rows, row pointers) and
// JPEG (output, and a progressive file's whole-image coefficient buffer, even at a reduced decode), and
// the image-folder loader skipping an over-budget image with a warning.
#include <gtest/gtest.h>
#include <png.h>

#include <cstdio>
#include <memory>

#include "data/image_decode.h"
#include "data/image_folder.h"
#include "tests/data/image_test_util.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using DecodeBudget = test::TempDirTest;

// An all-zero 8-bit grey PNG of w x h written row by row (never holding the image): a few hundred KB.
void write_zero_png(const std::string& path, uint32_t w, uint32_t h) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), std::fclose);
  ASSERT_TRUE(f);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  ASSERT_TRUE(png && info);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    FAIL() << "libpng failed writing " << path;
  }
  png_init_io(png, f.get());
  png_set_compression_level(png, 9);
  png_set_filter(png, 0, PNG_FILTER_NONE);
  png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  std::vector<uint8_t> row(w, 0);
  for (uint32_t y = 0; y < h; ++y) png_write_row(png, row.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
}

Image decode(const std::vector<uint8_t>& bytes, int64_t channels, int64_t budget, const ReductionFn& fn = {}) {
  return decode_image(bytes.data(), bytes.size(), channels, "memory", fn, budget);
}

TEST_F(DecodeBudget, HugeDimensionsInATinyPngAreRefusedBeforeAllocating) {
  const std::string p = path("zeros.png");
  write_zero_png(p, 16384, 16384);  // 2^28 pixels: exactly the pixel cap, so only the budget refuses it
  EXPECT_LT(read_file_bytes(p).size(), 2u << 20);
  // Grey to RGB: 3 bytes of output and 1 of libpng's grey rows per pixel, 1 GiB and a bit.
  test::expect_error([&] { read_image(p, 3); },
                     {p, "16384x16384 PNG", "needs 1025 MB", "decode memory budget of 512 MB", "data.decode_budget_mb"});
  test::expect_error([&] { read_image(p, 1, {}, int64_t(255) << 20); }, {p, "needs 257 MB", "budget of 255 MB"});
}

TEST_F(DecodeBudget, PngCostIsOutputExpansionRowsAndRowPointers) {
  // RGB to RGB: the output, libpng's two stored rows (+1 filter byte) and one row pointer per row.
  const std::vector<uint8_t> rgb = encode_png(test::random_image(50, 100, 3, 1));
  const int64_t rgb_cost = 50 * 100 * 3 + 2 * (100 * 3 + 1) + 50 * int64_t(sizeof(void*));
  EXPECT_EQ(decode(rgb, 3, rgb_cost).pixels.size(), 15000u);
  test::expect_error([&] { decode(rgb, 3, rgb_cost - 1); }, {"'memory'", "100x50 PNG", "decode memory budget"});
  // RGB to grey: libpng's RGB rows are an extra buffer before the luma conversion.
  const int64_t grey_cost = 50 * 100 * (1 + 3) + 2 * (100 * 3 + 1) + 50 * int64_t(sizeof(void*));
  EXPECT_EQ(decode(rgb, 1, grey_cost).pixels.size(), 5000u);
  test::expect_error([&] { decode(rgb, 1, grey_cost - 1); }, {"100x50 PNG"});
}

TEST_F(DecodeBudget, ProgressiveJpegCountsItsCoefficientBuffer) {
  const Image grey = test::random_image(48, 64, 1, 2);
  const std::vector<uint8_t> baseline = encode_jpeg(grey, 90), progressive =
      test::libjpeg_encode(grey.pixels.data(), 64, 48, 1, JCS_GRAYSCALE, true);
  // Baseline grey: the output only. Progressive: plus 8 x 6 blocks of 64 two-byte coefficients.
  const int64_t out = 48 * 64, coefficients = 8 * 6 * 64 * 2;
  EXPECT_EQ(decode(baseline, 1, out).pixels.size(), size_t(out));
  test::expect_error([&] { decode(baseline, 1, out - 1); }, {"64x48 JPEG", "decode memory budget"});
  EXPECT_EQ(decode(progressive, 1, out + coefficients).pixels.size(), size_t(out));
  test::expect_error([&] { decode(progressive, 1, out + coefficients - 1); }, {"64x48 JPEG"});
  // A reduced decode shrinks the output, not the coefficients of the full-size image.
  const auto eighth = [](int64_t, int64_t) { return int64_t(8); };
  EXPECT_EQ(decode(progressive, 1, 8 * 6 + coefficients, eighth).pixels.size(), 48u);
  test::expect_error([&] { decode(progressive, 1, 8 * 6 + coefficients - 1, eighth); }, {"64x48 JPEG"});
  test::expect_error([&] { decode(baseline, 1, 0); }, {"budget must be > 0"});
}

TEST_F(DecodeBudget, FolderLoaderSkipsAnOverBudgetImageWithAWarning) {
  const auto solid = [](int64_t h, int64_t w, uint8_t v) {
    return test::make_image(h, w, 3, [v](int64_t, int64_t, int64_t) { return v; });
  };
  for (const char* cls : {"a", "b"}) {
    const std::string dir = path(std::string("train/") + cls);
    std::filesystem::create_directories(dir);
    write_file_bytes(dir + "/small.png", encode_png(solid(6, 5, 40)));
  }
  const std::string big = path("train/b/big.png");  // 1100 x 1000 RGB: 3.3 MB decoded, over a 1 MB budget
  write_file_bytes(big, encode_png(solid(1000, 1100, 200)));
  std::vector<std::string> warnings;
  ImageFolderOptions o;
  o.root = dir_.string();
  o.train = false;
  o.batch_size = 3;
  o.image_size = 8;
  o.threads = 1;
  o.decode_budget_mb = 1;
  o.warn = [&](const std::string& m) { warnings.push_back(m); };
  ImageFolderLoader loader(o);
  const auto batch = loader.next();
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->labels.shape(), (Shape{3}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(big), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("1100x1000 PNG needs 4 MB, more than the decode memory budget of 1 MB"), std::string::npos)
      << warnings[0];
  o.decode_budget_mb = 0;
  test::expect_error([&] { ImageFolderLoader bad(o); }, {"decode_budget_mb must be in 1.."});
}

}  // namespace
}  // namespace moh
