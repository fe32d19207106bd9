// Philox-backed random fills on the CPU; element i is computed independently (the rules in
// core/math/random_math.h, shared with CUDA), so the loop is parallel and the result does not
// depend on the thread count.
#include "core/kernels/random.h"

#include "core/dispatch.h"
#include "core/math/convert.h"
#include "core/math/random_math.h"

namespace moh::cpu {
namespace {

template <class Fn>
void fill_each(const Tensor& out, const char* op, Fn value_at) {
  MOH_CHECK(out.is_contiguous(), op, ": output must be contiguous");
  const int64_t n = out.numel();
  dispatch_all(out.dtype(), op, [&]<class T>() {
    T* p = out.data<T>();
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) p[i] = from_double<T>(value_at(i));
  });
}

}  // namespace

void fill_uniform(const Tensor& out, double low, double high, uint64_t seed, uint64_t offset) {
  const bool wide = out.dtype() == DType::Float64;
  fill_each(out, "uniform", [&](int64_t i) { return uniform_value(seed, offset, uint64_t(i), low, high - low, wide); });
}

void fill_normal(const Tensor& out, double mean, double std, uint64_t seed, uint64_t offset) {
  fill_each(out, "normal", [&](int64_t i) { return normal_value(seed, offset, uint64_t(i), mean, std); });
}

void fill_bernoulli(const Tensor& out, double p, uint64_t seed, uint64_t offset) {
  const float threshold = float(p);
  fill_each(out, "bernoulli", [&](int64_t i) { return bernoulli_value(seed, offset, uint64_t(i), threshold); });
}

}  // namespace moh::cpu
