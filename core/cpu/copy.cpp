// Strided, converting copy on the CPU over the shared strided-loop engine.
#include "core/kernels/copy.h"

#include <cstring>

#include "core/cpu/strided_loop.h"
#include "core/dispatch.h"
#include "core/math/convert.h"

namespace moh::cpu {

// Contiguous same-type runs up to this many elements copy in a loop; longer ones through memcpy.
constexpr int64_t kShortRun = 32;

void copy(const Tensor& dst, const Tensor& src) {
  MOH_CHECK(dst.shape() == src.shape(), "copy: shapes differ ", dst.shape(), " vs ", src.shape());
  StridedIter<2> it(dst.shape(), {dst.strides(), src.strides()});
  std::array<char*, 2> base{static_cast<char*>(dst.raw_data()), static_cast<char*>(src.raw_data())};
  std::array<int64_t, 2> sizes{int64_t(dst.element_size()), int64_t(src.element_size())};
  dispatch_all(dst.dtype(), "copy", [&]<class To>() {
    dispatch_all(src.dtype(), "copy", [&]<class From>() {
      for_each_run<2>(it, base, sizes, [](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t n) {
        if constexpr (std::is_same_v<To, From>) {
          if (s[0] == int64_t(sizeof(To)) && s[1] == int64_t(sizeof(To))) {
            if (n > kShortRun) {
              std::memcpy(p[0], p[1], size_t(n) * sizeof(To));
              return;
            }
            // Short runs (a head's row, a few columns): a loop the compiler unrolls beats memcpy's call.
            To* d = reinterpret_cast<To*>(p[0]);
            const To* from = reinterpret_cast<const To*>(p[1]);
            for (int64_t i = 0; i < n; ++i) d[i] = from[i];
            return;
          }
        }
        for (int64_t i = 0; i < n; ++i)
          *reinterpret_cast<To*>(p[0] + i * s[0]) = convert<To>(*reinterpret_cast<const From*>(p[1] + i * s[1]));
      });
    });
  });
}

}  // namespace moh::cpu
