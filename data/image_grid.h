// image_grid: tiles a batch of float images into one 8-bit picture (sample sheets, reconstruction
// grids), row-major, `columns` per row, with a `gap`-pixel border of black between and around tiles.
// Pixel values map linearly from [low, high] to 0..255 (rounded to nearest) and are clipped;
// images_to_uint8_nhwc applies the same mapping to a batch without tiling it.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "data/image_decode.h"

namespace moh {

// images [N, C, H, W] (C = 1 or 3, any float dtype and device); N >= 1, columns >= 1, gap >= 0.
Image image_grid(const Tensor& images, int64_t columns, double low, double high, int64_t gap = 2);

// The same byte mapping without the tiling: uint8 [N, H, W, C] of images [N, C, H, W] (the layout of the
// ADM evaluation suite's sample batches).
Tensor images_to_uint8_nhwc(const Tensor& images, double low, double high);

}  // namespace moh
