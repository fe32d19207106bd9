// Initialisers: draw on the CPU in float64, then copy into the parameter (any dtype/device).
#include "layers/init.h"

#include <cmath>

#include "core/factory.h"
#include "core/ops.h"

namespace moh::init {
namespace {

void assign(const ag::Variable& param, const Tensor& values) {
  Tensor data = param.data();
  data.copy_(values.to(data.dtype()).to(data.device()));
}

}  // namespace

void xavier_uniform(const ag::Variable& param, Generator& gen, double gain) {
  const Shape& s = param.shape();
  MOH_CHECK(s.size() >= 2, "init::xavier_uniform: '", param.name(), "' needs >= 2 dims, got shape ", s);
  int64_t receptive = 1;
  for (size_t i = 2; i < s.size(); ++i) receptive *= s[i];
  const double fan_out = double(s[0] * receptive), fan_in = double(s[1] * receptive);
  const double a = gain * std::sqrt(6.0 / (fan_in + fan_out));
  uniform(param, gen, -a, a);
}

void trunc_normal(const ag::Variable& param, Generator& gen, double std, double mean) {
  MOH_CHECK(std > 0, "init::trunc_normal: std must be positive, got ", std);
  const int64_t n = param.numel();
  std::vector<double> out;
  out.reserve(size_t(n));
  while (int64_t(out.size()) < n) {
    // ~95.4% of draws land inside two standard deviations; redraw the rest in the next batch.
    for (double v : moh::normal({n - int64_t(out.size())}, 0, 1, gen, DType::Float64).to_vector<double>())
      if (std::fabs(v) <= 2.0) out.push_back(mean + std * v);
  }
  assign(param, from_vector(out, param.shape(), DType::Float64));
}

void normal(const ag::Variable& param, Generator& gen, double std, double mean) {
  assign(param, moh::normal(param.shape(), mean, std, gen, DType::Float64));
}

void uniform(const ag::Variable& param, Generator& gen, double low, double high) {
  assign(param, moh::uniform(param.shape(), low, high, gen, DType::Float64));
}

void zeros(const ag::Variable& param) {
  Tensor data = param.data();
  fill_(data, 0.0);
}

void ones(const ag::Variable& param) {
  Tensor data = param.data();
  fill_(data, 1.0);
}

}  // namespace moh::init
