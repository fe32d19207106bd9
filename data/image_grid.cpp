// Tiling float images into one 8-bit image (see image_grid.h).
#include "data/image_grid.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/factory.h"

namespace moh {
namespace {

// [low, high] -> 0..255, rounded to nearest, clipped; NaN -> 0.
uint8_t to_byte(double v, double low, double high) {
  const double t = (v - low) / (high - low);
  return uint8_t(std::nearbyint(std::clamp(std::isnan(t) ? 0.0 : t, 0.0, 1.0) * 255.0));
}

}  // namespace

Image image_grid(const Tensor& images, int64_t columns, double low, double high, int64_t gap) {
  MOH_CHECK(
      images.defined() && images.dim() == 4 && images.size(0) >= 1 && (images.size(1) == 1 || images.size(1) == 3),
      "image_grid: expected images [N >= 1, 1 or 3, H, W], got ", describe(images));
  MOH_CHECK(columns >= 1 && gap >= 0 && high > low, "image_grid: need columns >= 1, gap >= 0 and high > low, got ",
            columns, ", ", gap, ", [", low, ", ", high, "]");
  const int64_t n = images.size(0), c = images.size(1), h = images.size(2), w = images.size(3);
  const int64_t cols = std::min(columns, n), rows = (n + cols - 1) / cols;
  Image grid;
  grid.channels = c;
  grid.height = rows * h + (rows + 1) * gap;
  grid.width = cols * w + (cols + 1) * gap;
  grid.pixels.assign(size_t(grid.height * grid.width * c), 0);
  const std::vector<double> v = images.to(Device::cpu()).to_vector<double>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t top = gap + (i / cols) * (h + gap), left = gap + (i % cols) * (w + gap);
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) {
          grid.pixels[size_t(((top + y) * grid.width + left + x) * c + ch)] =
              to_byte(v[size_t(((i * c + ch) * h + y) * w + x)], low, high);
        }
  }
  return grid;
}

Tensor images_to_uint8_nhwc(const Tensor& images, double low, double high) {
  MOH_CHECK(images.defined() && images.dim() == 4 && high > low,
            "images_to_uint8_nhwc: expected images [N, C, H, W] and high > low, got ",
            images.defined() ? describe(images) : "undefined", ", [", low, ", ", high, "]");
  const int64_t n = images.size(0), c = images.size(1), h = images.size(2), w = images.size(3);
  const std::vector<double> v = images.to(Device::cpu()).to_vector<double>();
  std::vector<uint8_t> bytes(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < h * w; ++p)
        bytes[size_t((i * h * w + p) * c + ch)] = to_byte(v[size_t((i * c + ch) * h * w + p)], low, high);
  return from_vector<uint8_t>(bytes, {n, h, w, c}, DType::UInt8);
}

}  // namespace moh
