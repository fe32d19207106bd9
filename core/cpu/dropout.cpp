// Dropout on the CPU: one Philox block serves four consecutive elements (word i % 4 of counter
// offset + i / 4, exactly philox_word), so the mask does not depend on the thread count.
#include "core/kernels/dropout.h"

#include <algorithm>

#include "core/dispatch.h"
#include "core/math/dropout_math.h"

namespace moh::cpu {

void dropout(const Tensor& out, const Tensor& mask, const Tensor& x, double p, uint64_t seed,
             uint64_t offset) {
  const int64_t n = x.numel();
  if (n == 0) return;
  const float threshold = dropout_threshold(p);
  const int64_t blocks = (n + 3) / 4;
  dispatch_floating(x.dtype(), "dropout", [&]<class T>() {
    const T scale = T(dropout_scale(p));
    const T* px = x.data<T>();
    T* po = out.data<T>();
    bool* pm = mask.data<bool>();
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t b = 0; b < blocks; ++b) {
      const Philox4 r = philox4x32(seed, offset + uint64_t(b), 0);
      const int64_t end = std::min<int64_t>(4, n - 4 * b);
      for (int64_t w = 0; w < end; ++w) {
        const int64_t i = 4 * b + w;
        const bool keep = dropout_keep(r.v[w], threshold);
        pm[i] = keep;
        po[i] = keep ? px[i] * scale : T(0);
      }
    }
  });
}

}  // namespace moh::cpu
