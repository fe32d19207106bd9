// Constant fill over the strided-loop engine; a unit-stride run is one std::fill_n (memset speed).
#include "core/kernels/fill.h"

#include <algorithm>

#include "core/cpu/strided_loop.h"
#include "core/dispatch.h"
#include "core/math/convert.h"

namespace moh::cpu {

void fill(const Tensor& self, double value) {
  StridedIter<1> it(self.shape(), {self.strides()});
  dispatch_all(self.dtype(), "fill_", [&]<class T>() {
    const T v = from_double<T>(value);
    for_each_run<1>(it, {static_cast<char*>(self.raw_data())}, {int64_t(sizeof(T))},
                    [v](std::array<char*, 1> p, std::array<int64_t, 1> s, int64_t n) {
                      if (s[0] == int64_t(sizeof(T))) {
                        std::fill_n(reinterpret_cast<T*>(p[0]), n, v);
                        return;
                      }
                      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = v;
                    });
  });
}

}  // namespace moh::cpu
