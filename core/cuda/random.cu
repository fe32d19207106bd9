// Philox-backed random fills on CUDA, the twin of core/cpu/random.cpp: thread-independent element
// i is uniform_value / normal_value / bernoulli_value(seed, offset, i) (core/math/random_math.h,
// shared with the CPU) stored by from_double<T>, so a seed and offset give bit-identical tensors on
// both devices.
#include "core/kernels/random.h"

#include "core/cuda/elementwise_launch.cuh"
#include "core/math/convert.h"
#include "core/math/random_math.h"

namespace moh::cuda {
namespace {

template <class T, class Fn>
struct StoreEach {
  T* out;
  Fn value_at;
  __device__ __forceinline__ void operator()(int64_t i) const { out[i] = from_double<T>(value_at(uint64_t(i))); }
};

template <class Fn>
void fill_each(const Tensor& out, const char* op, const Fn& value_at) {
  MOH_CHECK(out.is_contiguous(), op, ": output must be contiguous");
  dispatch_all(out.dtype(), op, [&]<class T>() {
    for_each_index(out, out.numel(), op, StoreEach<T, Fn>{out.data<T>(), value_at});
  });
}

}  // namespace

void fill_uniform(const Tensor& out, double low, double high, uint64_t seed, uint64_t offset) {
  const double span = high - low;
  const bool wide = out.dtype() == DType::Float64;
  fill_each(out, "uniform",
            [=] __device__(uint64_t i) { return uniform_value(seed, offset, i, low, span, wide); });
}

void fill_normal(const Tensor& out, double mean, double std, uint64_t seed, uint64_t offset) {
  fill_each(out, "normal", [=] __device__(uint64_t i) { return normal_value(seed, offset, i, mean, std); });
}

void fill_bernoulli(const Tensor& out, double p, uint64_t seed, uint64_t offset) {
  const float threshold = float(p);
  fill_each(out, "bernoulli",
            [=] __device__(uint64_t i) { return bernoulli_value(seed, offset, i, threshold); });
}

}  // namespace moh::cuda
