// Fuzz target: PNG files through decode_image (data/image_decode.h), as the image-folder loader reads them.
#include <png.h>

#include "fuzz/image_target.h"
#include "tests/data/image_test_util.h"

namespace {

// An 8- or 16-bit PNG in libpng's simplified-API `format` (grey, grey+alpha, RGB, RGBA, colour-mapped).
moh::fuzz::Bytes simplified_png(uint32_t w, uint32_t h, uint32_t format, const void* pixels, const void* colormap,
                                uint32_t colormap_entries) {
  png_image desc{};
  desc.version = PNG_IMAGE_VERSION;
  desc.width = w;
  desc.height = h;
  desc.format = format;
  desc.colormap_entries = colormap_entries;
  png_alloc_size_t size = 0;
  moh::fuzz::Bytes out;
  bool ok = png_image_write_to_memory(&desc, nullptr, &size, 0, pixels, 0, colormap);
  if (ok) {
    out.resize(size);
    ok = png_image_write_to_memory(&desc, out.data(), &size, 0, pixels, 0, colormap);
    out.resize(size);
  }
  png_image_free(&desc);
  MOH_CHECK(ok, "png seeds: ", desc.message);
  return out;
}

void seeds(const moh::fuzz::AddSeed& add) {
  using moh::test::random_image;
  add("rgb.png", moh::encode_png(random_image(7, 9, 3, 1)));
  add("grey.png", moh::encode_png(random_image(5, 3, 1, 2)));
  add("one_pixel.png", moh::encode_png(random_image(1, 1, 3, 3)));
  const moh::Image rgba = random_image(4, 6, 4, 4), ga = random_image(3, 5, 2, 5);
  add("rgba.png", simplified_png(6, 4, PNG_FORMAT_RGBA, rgba.pixels.data(), nullptr, 0));
  add("grey_alpha.png", simplified_png(5, 3, PNG_FORMAT_GA, ga.pixels.data(), nullptr, 0));
  const std::vector<uint16_t> wide = {0, 0x12ff, 0xab01, 0xffff, 7, 8};
  add("grey16.png", simplified_png(3, 2, PNG_FORMAT_LINEAR_Y, wide.data(), nullptr, 0));
  const uint8_t colormap[4 * 3] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30};
  const uint8_t indices[6] = {0, 1, 2, 3, 2, 1};
  add("palette.png", simplified_png(3, 2, PNG_FORMAT_RGB_COLORMAP, indices, colormap, 4));
}

}  // namespace

MOH_FUZZ_TARGET(moh::fuzz::decode_as_loader, seeds)
