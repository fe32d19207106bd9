// Fuzz target: JPEG files through decode_image (data/image_decode.h), as the image-folder loader reads them
// (DCT-scaled reduced decodes included).
#include "fuzz/image_target.h"
#include "tests/data/image_test_util.h"

namespace {

void seeds(const moh::fuzz::AddSeed& add) {
  using moh::test::random_image;
  const moh::Image rgb = random_image(16, 24, 3, 1), grey = random_image(9, 17, 1, 2);
  add("rgb_q90.jpg", moh::encode_jpeg(rgb, 90));
  add("rgb_q20.jpg", moh::encode_jpeg(rgb, 20));
  add("grey.jpg", moh::encode_jpeg(grey, 75));
  add("one_pixel.jpg", moh::encode_jpeg(random_image(1, 1, 3, 3), 90));
  add("progressive_rgb.jpg", moh::test::libjpeg_encode(rgb.pixels.data(), 24, 16, 3, JCS_RGB, true));
  add("progressive_grey.jpg", moh::test::libjpeg_encode(grey.pixels.data(), 17, 9, 1, JCS_GRAYSCALE, true));
  const moh::Image cmyk = random_image(8, 8, 4, 4);
  add("adobe_cmyk.jpg", moh::test::libjpeg_encode(cmyk.pixels.data(), 8, 8, 4, JCS_CMYK, false));
}

}  // namespace

MOH_FUZZ_TARGET(moh::fuzz::decode_as_loader, seeds)
