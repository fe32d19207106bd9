// Constant fill on CUDA, the twin of core/cpu/fill.cpp: the value is stored as from_double<T>
// (core/math/convert.h, shared with the CPU) through map_elements with no inputs, so strided
// views (a transposed or sliced self) are filled in place.
#include "core/kernels/fill.h"

#include "core/cuda/elementwise_launch.cuh"
#include "core/math/convert.h"

namespace moh::cuda {
namespace {

template <class T>
struct Constant {
  T value;
  __device__ __forceinline__ T operator()() const { return value; }
};

}  // namespace

void fill(const Tensor& self, double value) {
  dispatch_all(self.dtype(), "fill_",
               [&]<class T>() { map_elements<T>(self, {}, Constant<T>{from_double<T>(value)}); });
}

}  // namespace moh::cuda
