// Rotary position embedding (RoPE), HF-LLaMA convention: the head dim Dh is split into halves
// x = [x1, x2] and pair i couples x1[i] with x2[i] (rotate_half), rotated by the angle
// pos * theta^(-2i/Dh), i in [0, Dh/2):
//   y1 = x1 cos - x2 sin,  y2 = x2 cos + x1 sin   (y = x*cos + rotate_half(x)*sin in HF terms).
// The tables hold one entry per pair, [max_positions, Dh/2] (HF caches the same values twice,
// cat(freqs, freqs)); they are computed in double and rounded once to the table dtype.
// apply_rope is one tape node whose backward is the rotation by -angle; it saves only the
// (gathered) tables. Meta-style interleaved pairs (x[2i], x[2i+1]) are NOT this layout.
#pragma once

#include <cstdint>

#include "autograd/variable.h"
#include "core/tensor.h"

namespace moh {

struct RopeOptions {
  int64_t head_dim = 0;  // even
  int64_t max_positions = 0;
  double theta = 10000.0;
  DType dtype = DType::Float32;
  Device device = Device::cpu();
};

// Rotates x [..., T, Dh] by the angles of cos/sin [T, Dh/2] (broadcast over leading dims), or
// x [B, H, T, Dh] by per-sample cos/sin [B, T, Dh/2]. Output is contiguous, shaped like x.
ag::Variable apply_rope(const ag::Variable& x, const Tensor& cos, const Tensor& sin);

class RotaryEmbedding {
 public:
  explicit RotaryEmbedding(const RopeOptions& options);
  // x [B, H, T, Dh] (or any [..., T, Dh]) at positions: undefined -> 0..T-1; int64 [T] -> shared by
  // the batch; int64 [B, T] -> per sample (x must then be [B, H, T, Dh]). Positions must be
  // < max_positions.
  ag::Variable forward(const ag::Variable& x, const Tensor& positions = {}) const;

  const RopeOptions& options() const { return options_; }
  const Tensor& cos() const { return cos_; }  // [max_positions, Dh/2]
  const Tensor& sin() const { return sin_; }
  void to(Device device);

 private:
  RopeOptions options_;
  Tensor cos_, sin_;
};

}  // namespace moh
