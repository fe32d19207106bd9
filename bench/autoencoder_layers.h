// The latent autoencoder's layers as benchmark problems (Fashion-MNIST padded to 32 x 32, channels
// 64 / 128): its convolutions and one group_norm. moh_bench_conv times all of them on the CPU and
// moh_bench_cuda the convolutions through cuDNN, so both programs measure the same layers; each picks
// its own batch size. Shapes are NCHW: input [batch, c, h, w], weight [o, c, k, k].
#pragma once

#include <cstdint>

#include "core/math/conv_geometry.h"

namespace moh::bench {

// One layer: a k x k convolution c -> o, or a group_norm over c channels when norm_groups > 0.
struct AutoencoderLayer {
  const char* name;
  int64_t c, h, w, o, k, stride, pad;
  int64_t norm_groups = 0;  // > 0: group_norm with this many groups instead of a convolution

  bool is_conv() const { return norm_groups == 0; }
  Conv2dParams conv_params() const { return {stride, stride, pad, pad, 1, 1, 1}; }
  // Floating-point operations of the convolution's forward (2 per multiply-add) for a batch; the
  // input-gradient and weight-gradient convolutions do as many.
  double conv_flop(int64_t batch) const {
    const int64_t ho = conv_output_size(h, k, stride, pad, 1), wo = conv_output_size(w, k, stride, pad, 1);
    return 2.0 * double(batch * o * ho * wo) * double(c * k * k);
  }
};

inline constexpr AutoencoderLayer kAutoencoderLayers[] = {
    {"conv_in 1->64 3x3 @32", 1, 32, 32, 64, 3, 1, 1},
    {"res 64->64 3x3 @32", 64, 32, 32, 64, 3, 1, 1},
    {"down 64->64 3x3 s2 @32", 64, 32, 32, 64, 3, 2, 1},
    {"res 128->128 3x3 @16", 128, 16, 16, 128, 3, 1, 1},
    {"res 128->128 3x3 @8", 128, 8, 8, 128, 3, 1, 1},
    {"shortcut 64->128 1x1 @16", 64, 16, 16, 128, 1, 1, 0},
    {"moments 128->8 3x3 @8", 128, 8, 8, 8, 3, 1, 1},
    {"group_norm 32 groups 128 @16", 128, 16, 16, 0, 0, 0, 0, 32},
};

}  // namespace moh::bench
