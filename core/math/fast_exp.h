// exp for float32 hot loops (attention scores): range reduction to 2^n * e^y with |y| <= ln2/2
// and a degree-6 Taylor polynomial (relative error < 2.5e-7, about two float32 ulp at worst).
// Written with plain arithmetic so compilers vectorise it; inputs below -87 flush to ~1e-38,
// callers that need exact zeros (masked scores) write them explicitly. Shared by both backends.
#pragma once

#include <cstdint>

#include "core/half.h"
#include "core/macros.h"

namespace moh {

// `take ? v : x` as a bit blend. A plain ?: lets GCC thread the constant through the rest of
// fast_exp into separate branches, and (float ops may trap) it then refuses to vectorise the loop.
MOH_HOST_DEVICE MOH_FORCE_INLINE float fast_exp_blend(bool take, float v, float x) {
  const uint32_t m = 0u - uint32_t(take);
  return bits_float((float_bits(x) & ~m) | (float_bits(v) & m));
}

MOH_HOST_DEVICE MOH_FORCE_INLINE float fast_exp(float x) {
  x = fast_exp_blend(x < -87.0f, -87.0f, x);
  x = fast_exp_blend(x > 88.0f, 88.0f, x);
  const float shifted = x * 1.44269504088896341f + 12582912.0f;  // 1.5 * 2^23 + round(x / ln 2)
  const float n = shifted - 12582912.0f;                           // round(x / ln 2)
  const float y = (x - n * 0.693359375f) + n * 2.12194440e-4f;  // x - n ln2, |y| <= ln2 / 2 (Cody-Waite split:
                                                                // n * 0.693359375 is exact)
  float p = 1.0f / 720.0f;
  p = p * y + 1.0f / 120.0f;
  p = p * y + 1.0f / 24.0f;
  p = p * y + 1.0f / 6.0f;
  p = p * y + 0.5f;
  p = p * y + 1.0f;
  p = p * y + 1.0f;
  // 2^n: n sits in shifted's low mantissa bits (its float bits are 0x4B400000 + n; the high bits shift
  // out). Integer arithmetic on the bits, so a NaN x (NaN through p) never meets a float-to-int
  // conversion, which would be undefined behaviour.
  const uint32_t scale_bits = (float_bits(shifted) + 127u) << 23;
  return p * bits_float(scale_bits);
}

}  // namespace moh
