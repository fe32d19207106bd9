// Dropout's per-element rule, shared by the CPU and CUDA backends so both draw the same mask.
// A dropout call on n elements reserves offset = gen.reserve(uniform_counters(n)) (always, even
// for p == 0 or 1) and, for element i in row-major order:
//   keep_i = philox_uniform(philox_word(seed, offset, i)) > float(p)   (uniform in (0, 1], stream 0)
//   out_i  = keep_i ? x_i * T(1.0 / (1.0 - p)) : 0                     (scale in double, rounded to T once;
//                                                                       16-bit T multiplies in float)
// so p == 0 keeps everything with scale 1 (out == x) and p == 1 keeps nothing.
#pragma once

#include <cstdint>

#include "core/macros.h"
#include "core/math/philox.h"

namespace moh {

MOH_HOST_DEVICE MOH_FORCE_INLINE float dropout_threshold(double p) { return float(p); }

MOH_HOST_DEVICE MOH_FORCE_INLINE double dropout_scale(double p) { return 1.0 / (1.0 - p); }

// `word` is philox_word(seed, offset, i); `threshold` is dropout_threshold(p).
MOH_HOST_DEVICE MOH_FORCE_INLINE bool dropout_keep(uint32_t word, float threshold) {
  return philox_uniform(word) > threshold;
}

}  // namespace moh
