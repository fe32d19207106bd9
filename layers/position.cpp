// Sinusoidal tables: host loops in double (a few thousand values), one conversion to the target.
#include "layers/position.h"

#include <cmath>
#include <vector>

#include "core/factory.h"

namespace moh {
namespace {

// Writes [f0(pos * w_k) ..., f1(pos * w_k) ...] (k < n) into row[0, 2n).
void sinusoid_pair(double* row, double pos, const std::vector<double>& freqs, bool cos_first) {
  const size_t n = freqs.size();
  for (size_t k = 0; k < n; ++k) {
    const double c = std::cos(pos * freqs[k]), s = std::sin(pos * freqs[k]);
    row[k] = cos_first ? c : s;
    row[n + k] = cos_first ? s : c;
  }
}

}  // namespace

Tensor timestep_embedding(const Tensor& t, int64_t dim, double max_period, SinusoidOrder order, DType dtype) {
  MOH_CHECK(t.defined() && t.dim() == 1, "timestep_embedding: expected timesteps [N], got ", describe(t));
  MOH_CHECK(dim > 0 && max_period > 0 && is_floating(dtype), "timestep_embedding: expected dim > 0, ",
            "max_period > 0 and a floating dtype, got dim=", dim, ", max_period=", max_period, ", ",
            dtype_name(dtype));
  const int64_t half = dim / 2, n = t.size(0);
  std::vector<double> freqs(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    freqs[size_t(i)] = std::exp(-std::log(max_period) * double(i) / double(half));
  const std::vector<double> steps = t.to(Device::cpu()).to_vector<double>();
  std::vector<double> out(size_t(n * dim), 0.0);  // an odd dim leaves the last column zero
  for (int64_t r = 0; r < n; ++r)
    sinusoid_pair(&out[size_t(r * dim)], steps[size_t(r)], freqs, order == SinusoidOrder::CosSin);
  return from_vector(out, {n, dim}, dtype, t.device());
}

Tensor sincos_table_1d(int64_t length, int64_t dim, double max_period, SinusoidOrder order, DType dtype,
                       Device device) {
  MOH_CHECK(length >= 0, "sincos_table_1d: length must be >= 0, got ", length);
  return timestep_embedding(arange(length, DType::Int64, device), dim, max_period, order, dtype);
}

Tensor sincos_table_2d(int64_t dim, int64_t grid_h, int64_t grid_w, int64_t extra_tokens, DType dtype,
                       Device device) {
  MOH_CHECK(dim > 0 && dim % 4 == 0 && grid_h >= 0 && grid_w >= 0 && extra_tokens >= 0 && is_floating(dtype),
            "sincos_table_2d: expected dim a positive multiple of 4, grid sizes and extra_tokens >= 0 and a ",
            "floating dtype, got dim=", dim, ", grid ", grid_h, "x", grid_w, ", extra_tokens=", extra_tokens,
            ", ", dtype_name(dtype));
  const int64_t quarter = dim / 4;
  std::vector<double> freqs(static_cast<size_t>(quarter));
  for (int64_t k = 0; k < quarter; ++k)
    freqs[size_t(k)] = 1.0 / std::pow(10000.0, double(k) / double(quarter));
  const int64_t rows = extra_tokens + grid_h * grid_w;
  std::vector<double> out(size_t(rows * dim), 0.0);
  for (int64_t r = 0; r < grid_h; ++r)
    for (int64_t c = 0; c < grid_w; ++c) {
      double* row = &out[size_t((extra_tokens + r * grid_w + c) * dim)];
      sinusoid_pair(row, double(c), freqs, false);
      sinusoid_pair(row + 2 * quarter, double(r), freqs, false);
    }
  return from_vector(out, {rows, dim}, dtype, device);
}

}  // namespace moh
