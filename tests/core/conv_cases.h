// The 13 convolution geometries the conv tests share (padding wider than the kernel's reach,
// uneven strides, dilation, groups, depthwise, pointwise with one and with several samples per im2col
// chunk, a partial last chunk), for the suites that check another path against them
// (tests/core/test_conv.cpp against the definition, tests/core/test_conv_onednn.cpp against im2col).
// Chunks: im2col takes 2048 / (HO * WO) samples per chunk, so the 4x4 and 6x6 outputs run several
// samples per chunk (with a partial last one), the 16x16 ones one sample each.
#pragma once

#include <cstdint>

#include "core/math/conv_geometry.h"

namespace moh::conv_test {

struct ConvCase {
  const char* name;
  int64_t n, c, h, w, o, kh, kw;
  Conv2dParams p;
};

inline constexpr ConvCase kCases[] = {
    {"3x3 same", 2, 3, 7, 6, 4, 3, 3, {1, 1, 1, 1, 1, 1, 1}},
    {"3x3 valid", 1, 2, 5, 5, 3, 3, 3, {}},
    {"stride 2 pad 1", 3, 4, 9, 8, 5, 3, 3, {2, 2, 1, 1, 1, 1, 1}},
    {"rectangular kernel, uneven stride", 2, 3, 8, 7, 2, 2, 3, {1, 2, 0, 1, 1, 1, 1}},
    {"dilation 2", 2, 2, 9, 9, 3, 3, 3, {1, 1, 2, 2, 2, 2, 1}},
    {"padding beyond the kernel", 1, 2, 3, 3, 2, 2, 2, {1, 1, 3, 2, 1, 1, 1}},
    {"groups 2", 2, 4, 6, 5, 6, 3, 3, {1, 1, 1, 1, 1, 1, 2}},
    {"depthwise", 2, 3, 5, 5, 3, 3, 3, {1, 1, 1, 1, 1, 1, 3}},
    {"pointwise, one sample per chunk", 3, 5, 16, 16, 4, 1, 1, {}},
    {"pointwise, chunked", 130, 3, 4, 4, 2, 1, 1, {}},
    {"1x1 stride 2", 2, 3, 6, 6, 2, 1, 1, {2, 2, 0, 0, 1, 1, 1}},
    {"chunked with a partial last chunk", 61, 2, 6, 6, 3, 3, 3, {1, 1, 0, 0, 1, 1, 1}},
    {"16x16 planes", 2, 3, 16, 16, 8, 3, 3, {1, 1, 1, 1, 1, 1, 1}},
};

}  // namespace moh::conv_test
