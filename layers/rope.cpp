// RoPE tables and the fused apply_rope node: forward and backward are the same half-split
// rotation (by +angle, then by -angle on the gradient), written with broadcasting ops.
#include "layers/rope.h"

#include <cmath>
#include <vector>

#include "autograd/tape.h"
#include "core/factory.h"
#include "core/ops.h"

namespace moh {
namespace {

// [x1, x2] -> [x1 cos - s x2 sin, x2 cos + s x1 sin], s = +1 (rotate by +angle) or -1 (by -angle).
Tensor rotate(const Tensor& x, const Tensor& cos, const Tensor& sin, double s) {
  const int64_t half = x.size(-1) / 2;
  Tensor x1 = x.narrow(-1, 0, half), x2 = x.narrow(-1, half, half);
  Tensor y1 = mul(x1, cos);
  add_(y1, mul(x2, sin), -s);
  Tensor y2 = mul(x2, cos);
  add_(y2, mul(x1, sin), s);
  return cat({y1, y2}, -1);
}

}  // namespace

ag::Variable apply_rope(const ag::Variable& x, const Tensor& cos, const Tensor& sin) {
  MOH_CHECK(x.defined() && x.dim() >= 2 && x.size(-1) > 0 && x.size(-1) % 2 == 0,
            "apply_rope: expected x [..., T, Dh] with an even head dim, got ", x.describe());
  MOH_CHECK(cos.defined() && sin.defined() && cos.shape() == sin.shape() && cos.dtype() == x.dtype() &&
                sin.dtype() == x.dtype() && cos.device() == x.device() && sin.device() == x.device(),
            "apply_rope: cos ", describe(cos), " and sin ", describe(sin), " must be alike and match x ",
            x.describe());
  const int64_t t = x.size(-2), half = x.size(-1) / 2;
  Tensor c = cos, s = sin;
  if (cos.dim() == 3) {  // per-sample positions
    MOH_CHECK(x.dim() == 4 && cos.shape() == Shape({x.size(0), t, half}), "apply_rope: per-sample tables ",
              describe(cos), " need x [B, H, T, Dh] with [B, T, Dh/2] = [", x.size(0), ", ", t, ", ", half,
              "], got x ", x.describe());
    c = cos.unsqueeze(1);
    s = sin.unsqueeze(1);
  } else {
    MOH_CHECK(cos.shape() == Shape({t, half}), "apply_rope: tables ", describe(cos), " must be [T, Dh/2] = [",
              t, ", ", half, "] for x ", x.describe());
  }
  return ag::record(
      "apply_rope", rotate(x.data(), c, s, 1.0), {x},
      [c, s](const Tensor& g, const ag::Needs&) { return std::vector<Tensor>{rotate(g, c, s, -1.0)}; });
}

RotaryEmbedding::RotaryEmbedding(const RopeOptions& options) : options_(options) {
  const RopeOptions& o = options;
  MOH_CHECK(o.head_dim > 0 && o.head_dim % 2 == 0 && o.max_positions > 0 && o.theta > 0,
            "RotaryEmbedding: expected an even head_dim > 0, max_positions > 0 and theta > 0, got head_dim=",
            o.head_dim, ", max_positions=", o.max_positions, ", theta=", o.theta);
  const int64_t half = o.head_dim / 2;
  std::vector<double> cos_values(size_t(o.max_positions * half)), sin_values(cos_values.size());
  for (int64_t i = 0; i < half; ++i) {
    const double inv_freq = std::pow(o.theta, -2.0 * double(i) / double(o.head_dim));
    for (int64_t pos = 0; pos < o.max_positions; ++pos) {
      const double angle = double(pos) * inv_freq;
      cos_values[size_t(pos * half + i)] = std::cos(angle);
      sin_values[size_t(pos * half + i)] = std::sin(angle);
    }
  }
  cos_ = from_vector(cos_values, {o.max_positions, half}, o.dtype, o.device);
  sin_ = from_vector(sin_values, {o.max_positions, half}, o.dtype, o.device);
}

void RotaryEmbedding::to(Device device) {
  options_.device = device;
  cos_ = cos_.to(device);
  sin_ = sin_.to(device);
}

ag::Variable RotaryEmbedding::forward(const ag::Variable& x, const Tensor& positions) const {
  const std::string label =
      str_cat("RotaryEmbedding(head_dim=", options_.head_dim, ", max_positions=", options_.max_positions,
              ", theta=", options_.theta, ")");
  MOH_CHECK(x.defined() && x.dim() >= 2 && x.size(-1) == options_.head_dim && x.dtype() == options_.dtype,
            label, ": expected x [..., T, ", options_.head_dim, "] of ", dtype_name(options_.dtype), ", got ",
            x.describe());
  const int64_t t = x.size(-2);
  if (!positions.defined()) {
    MOH_CHECK(t <= options_.max_positions, label, ": sequence length ", t, " exceeds max_positions");
    return apply_rope(x, cos_.narrow(0, 0, t), sin_.narrow(0, 0, t));
  }
  const bool shared = positions.dim() == 1, per_sample = positions.dim() == 2 && x.dim() == 4;
  MOH_CHECK(positions.dtype() == DType::Int64 && (shared || per_sample) && positions.size(-1) == t &&
                (shared || positions.size(0) == x.size(0)),
            label, ": positions must be int64 [T] or [B, T] (x [B, H, T, Dh]) with T = ", t, ", got ",
            describe(positions), " for x ", x.describe());
  try {
    return apply_rope(x, embedding(cos_, positions), embedding(sin_, positions));
  } catch (const Error& e) {
    MOH_FAIL(label, ": ", e.what());
  }
}

}  // namespace moh
