// Image-classification transforms with torchvision semantics, fused into one resampling pass:
// RandomResizedCrop + horizontal flip for training, Resize(shorter side) + CenterCrop for evaluation,
// both ending in ToTensor + Normalize (float32 CHW, (v / 255 - mean[c]) / std[c]). The geometry is a
// SampleGrid: output pixel o of an axis reads the source at clamp(start + o * step, lo, hi) (pixel-centre
// coordinates) by bilinear interpolation, exactly torch's interpolate(mode="bilinear",
// align_corners=False, antialias=False) of the crop. There is no antialiasing: downscaling by more than
// about 2x aliases; the loader avoids most of it by decoding JPEGs at reduced size (DCT scaling, a proper
// low-pass) so the remaining bilinear factor stays below 2. Randomness comes only from the Generator.
#pragma once

#include <array>
#include <cstdint>

#include "core/random.h"
#include "data/image_decode.h"

namespace moh {

struct CropBox {
  int64_t top = 0, left = 0, height = 0, width = 0;
};

struct AxisMap {
  double start = 0, step = 1, lo = 0, hi = 0;  // source position of output o: clamp(start + o * step, lo, hi)
};

struct SampleGrid {
  AxisMap y, x;
};

// A uniform double in [0, 1) from `gen` (one Philox counter per draw).
double uniform01(Generator& gen);

// torchvision RandomResizedCrop.get_params: up to 10 tries of area fraction ~ U(scale) and aspect ratio
// ~ exp(U(log ratio)); w = round(sqrt(area * r)), h = round(sqrt(area / r)) (round half to even); on
// success a uniform position; after 10 failures the centre crop with the ratio clamped into range.
CropBox random_resized_crop_box(int64_t height, int64_t width, const std::array<double, 2>& scale,
                                const std::array<double, 2>& ratio, Generator& gen);

// The crop `box` resized to out_h x out_w (what torchvision does after cropping).
SampleGrid crop_resize_grid(const CropBox& box, int64_t out_h, int64_t out_w);

// torchvision Resize(resize) of the shorter side (the longer one becomes int(resize * long / short)) and
// CenterCrop(size) (offsets int(round((side - size) / 2))); needs resize >= size.
SampleGrid resize_center_crop_grid(int64_t height, int64_t width, int64_t resize, int64_t size);

// The largest of 8, 4, 2, 1 not above the grid's source pixels per output pixel on either axis: decoding
// at that reduction keeps at least one source pixel per output pixel.
int64_t max_reduction(const SampleGrid& grid);

// The same grid on a decode at 1/reduction size (height x width): decoded pixel i covers full-size pixels
// [i * reduction, (i + 1) * reduction).
SampleGrid reduce_grid(const SampleGrid& grid, int64_t reduction, int64_t height, int64_t width);

// Samples `image` on `grid` into out[C, out_h, out_w] (C = image.channels), mirrored left-right when
// `flip`, normalised with mean[c] / std[c] (each C values).
void resample_normalize(const Image& image, const SampleGrid& grid, int64_t out_h, int64_t out_w, bool flip,
                        const float* mean, const float* std, float* out);

}  // namespace moh
