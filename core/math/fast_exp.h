// exp for float32 hot loops (attention scores): range reduction to 2^n * e^y with |y| <= ln2/2
// and a degree-6 Taylor polynomial (relative error < 2e-7, under one float32 ulp for most inputs).
// Written with plain arithmetic so compilers vectorise it; inputs below -87 flush to ~1e-38,
// callers that need exact zeros (masked scores) write them explicitly. Shared by both backends.
#pragma once

#include <cstdint>

#include "core/half.h"
#include "core/macros.h"

namespace moh {

MOH_HOST_DEVICE MOH_FORCE_INLINE float fast_exp(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float t = x * 1.44269504088896341f;                 // x / ln 2
  const float n = (t + 12582912.0f) - 12582912.0f;          // round to nearest integer (1.5 * 2^23 trick)
  const float y = (t - n) * 0.693147180559945309f;          // remainder, |y| <= ln2 / 2
  float p = 1.0f / 720.0f;
  p = p * y + 1.0f / 120.0f;
  p = p * y + 1.0f / 24.0f;
  p = p * y + 1.0f / 6.0f;
  p = p * y + 0.5f;
  p = p * y + 1.0f;
  p = p * y + 1.0f;
  const uint32_t scale_bits = uint32_t(int32_t(n) + 127) << 23;
  return p * bits_float(scale_bits);
}

}  // namespace moh
