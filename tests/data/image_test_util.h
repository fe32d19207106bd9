// Small uint8 HWC images for the image decode/transform/folder tests (and the image fuzz targets' seeds):
// built from a pixel function, or seeded random noise (every byte value likely, so any misplaced pixel or
// channel shows); and JPEG files of the kinds encode_jpeg does not write.
#pragma once

#include <cstdint>
#include <cstdio>  // jpeglib.h needs FILE
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include <jpeglib.h>

#include "data/image_decode.h"

namespace moh::test {

inline Image make_image(int64_t h, int64_t w, int64_t c, const std::function<uint8_t(int64_t, int64_t, int64_t)>& fn) {
  Image img;
  img.height = h;
  img.width = w;
  img.channels = c;
  img.pixels.reserve(size_t(h * w * c));
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k) img.pixels.push_back(fn(y, x, k));
  return img;
}

inline Image random_image(int64_t h, int64_t w, int64_t c, uint32_t seed) {
  std::mt19937 rng(seed);
  return make_image(h, w, c, [&](int64_t, int64_t, int64_t) { return uint8_t(rng()); });
}

// A JPEG written by libjpeg itself from `components` interleaved samples per pixel: progressive
// (multi-scan) when asked, and for JCS_CMYK input an Adobe CMYK file (the marker and inverted values
// Photoshop writes).
inline std::vector<uint8_t> libjpeg_encode(const uint8_t* pixels, int width, int height, int components,
                                           J_COLOR_SPACE space, bool progressive, int quality = 90) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = JDIMENSION(width);
  c.image_height = JDIMENSION(height);
  c.input_components = components;
  c.in_color_space = space;
  jpeg_set_defaults(&c);
  if (space == JCS_CMYK) jpeg_set_colorspace(&c, JCS_CMYK);  // writes the Adobe marker
  if (progressive) jpeg_simple_progression(&c);
  jpeg_set_quality(&c, quality, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(pixels) + c.next_scanline * size_t(width) * size_t(components);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::vector<uint8_t> out(buf, buf + size);
  std::free(buf);
  return out;
}

}  // namespace moh::test
