// The parameters of a 2-D convolution and the sizes they imply, shared by the op front end
// (core/ops/conv.cpp, which validates them) and both backends (which trust them). NCHW layout:
// input [N, C, H, W], weight [O, C / groups, KH, KW], output [N, O, HO, WO] with
// HO = floor((H + 2 * pad_h - dilation_h * (KH - 1) - 1) / stride_h) + 1, as torch's conv2d.
#pragma once

#include <cstdint>

#include "core/macros.h"
#include "core/shape.h"

namespace moh {

struct Conv2dParams {
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;  // zero padding on both sides
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
};

// One output size along an axis (may be <= 0 for a kernel wider than the padded input: the front end
// rejects that).
MOH_HOST_DEVICE inline int64_t conv_output_size(int64_t input, int64_t kernel, int64_t stride, int64_t pad,
                                                int64_t dilation) {
  const int64_t span = dilation * (kernel - 1) + 1;
  const int64_t padded = input + 2 * pad;
  return padded < span ? 0 : (padded - span) / stride + 1;
}

struct ConvGeometry {
  int64_t n, c, h, w;   // input
  int64_t o, kh, kw;    // weight (its second dim is cg)
  int64_t ho, wo;       // output
  int64_t groups, cg, og;  // groups, input and output channels per group
  Conv2dParams p;

  int64_t patch() const { return cg * kh * kw; }  // one output value's inputs per group (GEMM K)
  int64_t out_plane() const { return ho * wo; }
  int64_t in_plane() const { return h * w; }
  // A 1x1 kernel with unit stride and no padding: the columns are the input itself.
  bool pointwise() const {
    return kh == 1 && kw == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 && p.pad_w == 0;
  }
};

// Sizes from already validated shapes: input [n, c, h, w], weight [o, c / groups, kh, kw].
inline ConvGeometry conv_geometry(const Shape& input, const Shape& weight, const Conv2dParams& p) {
  ConvGeometry g{};
  g.n = input[0], g.c = input[1], g.h = input[2], g.w = input[3];
  g.o = weight[0], g.kh = weight[2], g.kw = weight[3];
  g.groups = p.groups, g.cg = g.c / p.groups, g.og = g.o / p.groups;
  g.ho = conv_output_size(g.h, g.kh, p.stride_h, p.pad_h, p.dilation_h);
  g.wo = conv_output_size(g.w, g.kw, p.stride_w, p.pad_w, p.dilation_w);
  g.p = p;
  return g;
}

}  // namespace moh
