// Crop geometry (torchvision's rules, in full-size pixel coordinates), its mapping onto reduced JPEG
// decodes, and the fused bilinear resample + normalise kernel (per-axis tap tables, one pass over the
// output, specialised for 1 and 3 channels).
#include "data/image_transforms.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/math/philox.h"

namespace moh {
namespace {

// Python's round(): half to even (the default floating-point rounding mode).
int64_t round_even(double v) { return int64_t(std::nearbyint(v)); }

// Bilinear taps of one axis: output o reads i0[o] with weight 1 - w[o] and i1[o] with weight w[o].
struct Taps {
  std::vector<int64_t> i0, i1;
  std::vector<float> w;
};

Taps make_taps(const AxisMap& m, int64_t out, int64_t size, bool flip) {
  Taps t;
  t.i0.resize(size_t(out));
  t.i1.resize(size_t(out));
  t.w.resize(size_t(out));
  for (int64_t o = 0; o < out; ++o) {
    const double pos = std::clamp(m.start + double(flip ? out - 1 - o : o) * m.step, m.lo, m.hi);
    const int64_t i0 = std::clamp<int64_t>(int64_t(std::floor(pos)), 0, size - 1);
    t.i0[size_t(o)] = i0;
    t.i1[size_t(o)] = std::min(i0 + 1, size - 1);
    t.w[size_t(o)] = float(std::clamp(pos - double(i0), 0.0, 1.0));
  }
  return t;
}

template <int C>
void resample(const Image& img, const Taps& ty, const Taps& tx, int64_t out_h, int64_t out_w,
              const float* scale, const float* shift, float* out) {
  const uint8_t* pix = img.pixels.data();
  const int64_t row = img.width * C, plane = out_h * out_w;
  for (int64_t oy = 0; oy < out_h; ++oy) {
    const uint8_t* r0 = pix + ty.i0[size_t(oy)] * row;
    const uint8_t* r1 = pix + ty.i1[size_t(oy)] * row;
    const float wy1 = ty.w[size_t(oy)], wy0 = 1.0f - wy1;
    float* o = out + oy * out_w;
    for (int64_t ox = 0; ox < out_w; ++ox) {
      const int64_t a = tx.i0[size_t(ox)] * C, b = tx.i1[size_t(ox)] * C;
      const float wx1 = tx.w[size_t(ox)], wx0 = 1.0f - wx1;
      for (int c = 0; c < C; ++c) {
        const float v = wy0 * (wx0 * float(r0[a + c]) + wx1 * float(r0[b + c])) +
                        wy1 * (wx0 * float(r1[a + c]) + wx1 * float(r1[b + c]));
        o[c * plane + ox] = v * scale[c] - shift[c];
      }
    }
  }
}

}  // namespace

double uniform01(Generator& gen) {
  const Philox4 r = philox4x32(gen.seed(), gen.reserve(1), 0);
  return double(((uint64_t(r.v[0]) << 21) ^ uint64_t(r.v[1] >> 11)) & ((uint64_t(1) << 53) - 1)) * 0x1p-53;
}

CropBox random_resized_crop_box(int64_t height, int64_t width, const std::array<double, 2>& scale,
                                const std::array<double, 2>& ratio, Generator& gen) {
  MOH_CHECK(height > 0 && width > 0, "random_resized_crop_box: empty image ", width, "x", height);
  MOH_CHECK(
      scale[0] > 0 && scale[0] <= scale[1] && ratio[0] > 0 && ratio[0] <= ratio[1],
      "random_resized_crop_box: need 0 < scale[0] <= scale[1] and 0 < ratio[0] <= ratio[1], got scale (",
      scale[0], ", ", scale[1], "), ratio (", ratio[0], ", ", ratio[1], ")");
  const double area = double(height) * double(width);
  const double log_lo = std::log(ratio[0]), log_hi = std::log(ratio[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * (scale[0] + (scale[1] - scale[0]) * uniform01(gen));
    const double aspect = std::exp(log_lo + (log_hi - log_lo) * uniform01(gen));
    const int64_t w = round_even(std::sqrt(target * aspect)), h = round_even(std::sqrt(target / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const int64_t top = std::min(int64_t(uniform01(gen) * double(height - h + 1)), height - h);
      const int64_t left = std::min(int64_t(uniform01(gen) * double(width - w + 1)), width - w);
      return {top, left, h, w};
    }
  }
  const double in_ratio = double(width) / double(height);
  int64_t w = width, h = height;
  if (in_ratio < ratio[0])
    h = round_even(double(w) / ratio[0]);
  else if (in_ratio > ratio[1])
    w = round_even(double(h) * ratio[1]);
  return {(height - h) / 2, (width - w) / 2, h, w};
}

SampleGrid crop_resize_grid(const CropBox& box, int64_t out_h, int64_t out_w) {
  MOH_CHECK(box.height > 0 && box.width > 0 && out_h > 0 && out_w > 0, "crop_resize_grid: empty crop ",
            box.width, "x", box.height, " or output ", out_w, "x", out_h);
  auto axis = [](int64_t begin, int64_t len, int64_t out) {
    const double step = double(len) / double(out);
    return AxisMap{double(begin) + 0.5 * step - 0.5, step, double(begin), double(begin + len - 1)};
  };
  return {axis(box.top, box.height, out_h), axis(box.left, box.width, out_w)};
}

SampleGrid resize_center_crop_grid(int64_t height, int64_t width, int64_t resize, int64_t size) {
  MOH_CHECK(height > 0 && width > 0 && size > 0 && resize >= size,
            "resize_center_crop_grid: need a non-empty image and resize >= size, got ", width, "x", height,
            ", resize ", resize, ", size ", size);
  const int64_t shorter = std::min(height, width), longer = std::max(height, width);
  const int64_t resized_long = int64_t(double(resize * longer) / double(shorter));
  const int64_t new_h = height <= width ? resize : resized_long;
  const int64_t new_w = height <= width ? resized_long : resize;
  auto axis = [size](int64_t len, int64_t new_len) {
    const double step = double(len) / double(new_len);
    const int64_t offset = round_even(double(new_len - size) / 2.0);
    return AxisMap{(double(offset) + 0.5) * step - 0.5, step, 0.0, double(len - 1)};
  };
  return {axis(height, new_h), axis(width, new_w)};
}

int64_t max_reduction(const SampleGrid& grid) {
  const double step = std::min(grid.y.step, grid.x.step);
  int64_t r = 8;
  while (r > 1 && double(r) > step) r /= 2;
  return r;
}

SampleGrid reduce_grid(const SampleGrid& grid, int64_t reduction, int64_t height, int64_t width) {
  const double r = double(reduction);
  auto axis = [r](const AxisMap& m, int64_t size) {
    const double lo = std::clamp((m.lo + 0.5) / r - 0.5, 0.0, double(size - 1));
    const double hi = std::clamp((m.hi + 0.5) / r - 0.5, lo, double(size - 1));
    return AxisMap{(m.start + 0.5) / r - 0.5, m.step / r, lo, hi};
  };
  return {axis(grid.y, height), axis(grid.x, width)};
}

void resample_normalize(const Image& image, const SampleGrid& grid, int64_t out_h, int64_t out_w, bool flip,
                        const float* mean, const float* std, float* out) {
  MOH_CHECK(image.channels == 1 || image.channels == 3,
            "resample_normalize: images must have 1 or 3 channels, got ", image.channels);
  MOH_CHECK(image.height > 0 && image.width > 0 && out_h > 0 && out_w > 0 &&
                image.pixels.size() == size_t(image.height * image.width * image.channels),
            "resample_normalize: bad image ", image.width, "x", image.height, "x", image.channels, " (",
            image.pixels.size(), " bytes) or output ", out_w, "x", out_h);
  float scale[3], shift[3];
  for (int64_t c = 0; c < image.channels; ++c) {
    MOH_CHECK(std[c] > 0, "resample_normalize: std[", c, "] must be > 0, got ", std[c]);
    scale[c] = 1.0f / (255.0f * std[c]);
    shift[c] = mean[c] / std[c];
  }
  const Taps ty = make_taps(grid.y, out_h, image.height, false),
             tx = make_taps(grid.x, out_w, image.width, flip);
  if (image.channels == 3)
    resample<3>(image, ty, tx, out_h, out_w, scale, shift, out);
  else
    resample<1>(image, ty, tx, out_h, out_w, scale, shift, out);
}

}  // namespace moh
