// Dropout on CUDA, the twin of core/cpu/dropout.cpp: thread b owns the four elements of Philox
// block b (word i % 4 of counter offset + i / 4, exactly philox_word) and applies the rule of
// core/math/dropout_math.h, so the mask is bit-identical to the CPU's for one seed and offset.
// 16-bit floats multiply in float and round once.
#include "core/kernels/dropout.h"

#include "core/cuda/elementwise_launch.cuh"
#include "core/math/dropout_math.h"

namespace moh::cuda {
namespace {

template <class T>
struct DropoutBlock {
  using C = compute_t<T>;
  T* out;
  bool* mask;
  const T* x;
  int64_t n;
  uint64_t seed, offset;
  float threshold;
  C scale;

  __device__ __forceinline__ void operator()(int64_t b) const {
    const Philox4 r = philox4x32(seed, offset + uint64_t(b), 0);
    for (int w = 0; w < 4; ++w) {
      const int64_t i = 4 * b + w;
      if (i >= n) return;
      const bool keep = dropout_keep(r.v[w], threshold);
      mask[i] = keep;
      out[i] = keep ? T(C(x[i]) * scale) : T(C(0));
    }
  }
};

}  // namespace

void dropout(const Tensor& out, const Tensor& mask, const Tensor& x, double p, uint64_t seed,
             uint64_t offset) {
  const int64_t n = x.numel();
  dispatch_math_float(x.dtype(), "dropout", [&]<class T>() {
    using C = compute_t<T>;
    const DropoutBlock<T> block{out.data<T>(), mask.data<bool>(), x.data<T>(), n, seed, offset,
                                dropout_threshold(p), C(dropout_scale(p))};
    for_each_index(x, (n + 3) / 4, "dropout", block);
  });
}

}  // namespace moh::cuda
