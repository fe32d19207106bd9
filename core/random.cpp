// Random factories: reserve counters from the generator, then fill on the tensor's device.
#include "core/random.h"

#include "core/dispatch.h"
#include "core/kernels/random.h"

namespace moh {

Tensor uniform(const Shape& shape, double low, double high, Generator& gen, DType dtype, Device device) {
  MOH_CHECK(low <= high, "uniform: low ", low, " > high ", high);
  Tensor out = Tensor::empty(shape, dtype, device);
  int64_t n = out.numel();
  uint64_t at = gen.reserve(dtype == DType::Float64 ? normal_counters(n) : uniform_counters(n));
  MOH_BACKEND(device, fill_uniform, out, low, high, gen.seed(), at);
  return out;
}

Tensor normal(const Shape& shape, double mean, double std, Generator& gen, DType dtype, Device device) {
  MOH_CHECK(std >= 0, "normal: std must be >= 0, got ", std);
  Tensor out = Tensor::empty(shape, dtype, device);
  uint64_t at = gen.reserve(normal_counters(out.numel()));
  MOH_BACKEND(device, fill_normal, out, mean, std, gen.seed(), at);
  return out;
}

Tensor bernoulli(const Shape& shape, double p, Generator& gen, DType dtype, Device device) {
  MOH_CHECK(p >= 0 && p <= 1, "bernoulli: p must be in [0, 1], got ", p);
  Tensor out = Tensor::empty(shape, dtype, device);
  uint64_t at = gen.reserve(uniform_counters(out.numel()));
  MOH_BACKEND(device, fill_bernoulli, out, p, gen.seed(), at);
  return out;
}

}  // namespace moh
