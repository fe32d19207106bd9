// Fixed sinusoidal position tables, computed in double on the host and rounded once to `dtype`.
//  - timestep_embedding: DiT/GLIDE's embedding of (possibly fractional) timesteps t [N] -> [N, dim]:
//    freq_i = max_period^(-i/half), half = dim/2, args = t * freq; columns [cos(args), sin(args)]
//    (DiT order; SinusoidOrder::SinCos gives the Transformer's [sin, cos]); an odd dim gets a zero
//    last column. sincos_table_1d(length, dim) is the same for t = 0..length-1.
//  - sincos_table_2d: MAE/DiT get_2d_sincos_pos_embed for a grid_h x grid_w patch grid, token
//    m = r * grid_w + c (row-major, PatchEmbed's order): the first dim/2 columns embed the COLUMN
//    index c, the last dim/2 the ROW index r (the reference's meshgrid(w, h) ordering), each as
//    [sin(pos * w_k), cos(pos * w_k)], w_k = 10000^(-k / (dim/4)), k < dim/4; `extra_tokens` zero
//    rows come first (class/register tokens).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh {

enum class SinusoidOrder { CosSin, SinCos };

// t: 1-D, any real or integer dtype, any device (read back to the host); result on t's device.
Tensor timestep_embedding(const Tensor& t, int64_t dim, double max_period = 10000.0,
                          SinusoidOrder order = SinusoidOrder::CosSin, DType dtype = DType::Float32);
Tensor sincos_table_1d(int64_t length, int64_t dim, double max_period = 10000.0,
                       SinusoidOrder order = SinusoidOrder::CosSin, DType dtype = DType::Float32,
                       Device device = Device::cpu());
// -> [extra_tokens + grid_h * grid_w, dim]; dim must be a multiple of 4.
Tensor sincos_table_2d(int64_t dim, int64_t grid_h, int64_t grid_w, int64_t extra_tokens = 0,
                       DType dtype = DType::Float32, Device device = Device::cpu());

}  // namespace moh
