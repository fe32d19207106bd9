// Small uint8 HWC images for the image decode/transform/folder tests: built from a pixel function, or
// seeded random noise (every byte value likely, so any misplaced pixel or channel shows).
#pragma once

#include <cstdint>
#include <functional>
#include <random>

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

}  // namespace moh::test
