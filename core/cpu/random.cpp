// Philox-backed random fills on the CPU; element i is computed independently, so the loop is
// parallel and the result does not depend on the thread count.
#include "core/cpu/random.h"

#include "core/dispatch.h"
#include "core/math/philox.h"

namespace moh::cpu {
namespace {

template <class Fn>
void fill_each(const Tensor& out, const char* op, Fn value_at) {
  MOH_CHECK(out.is_contiguous(), op, ": output must be contiguous");
  const int64_t n = out.numel();
  dispatch_all(out.dtype(), op, [&]<class T>() {
    T* p = out.data<T>();
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, BFloat16> || std::is_same_v<T, Float16>) p[i] = T(float(value_at(i)));
      else p[i] = static_cast<T>(value_at(i));
    }
  });
}

}  // namespace

void fill_uniform(const Tensor& out, double low, double high, uint64_t seed, uint64_t offset) {
  const double span = high - low;
  if (out.dtype() == DType::Float64) {
    // Two words per element for 53 bits: element i uses words (2i, 2i+1) of stream 2.
    fill_each(out, "uniform", [&](int64_t i) {
      Philox4 r = philox4x32(seed, offset + uint64_t(i) / 2, 2);
      uint32_t k = uint32_t(i % 2) * 2;
      return low + span * philox_uniform_double(r.v[k], r.v[k + 1]);
    });
    return;
  }
  fill_each(out, "uniform", [&](int64_t i) {
    return low + span * double(philox_uniform(philox_word(seed, offset, uint64_t(i))));
  });
}

void fill_normal(const Tensor& out, double mean, double std, uint64_t seed, uint64_t offset) {
  fill_each(out, "normal", [&](int64_t i) { return mean + std * double(philox_normal(seed, offset, uint64_t(i))); });
}

void fill_bernoulli(const Tensor& out, double p, uint64_t seed, uint64_t offset) {
  const float threshold = float(p);
  fill_each(out, "bernoulli", [&](int64_t i) {
    return philox_uniform(philox_word(seed, offset, uint64_t(i))) <= threshold ? 1.0 : 0.0;
  });
}

}  // namespace moh::cpu
