// Philox4x32-10 counter-based random numbers (Salmon et al., SC'11), shared by both backends.
// A (key, counter) pair maps to four independent uint32 values; no state is carried between
// calls, so element i of a random tensor can be computed anywhere (CPU loop, CUDA thread)
// and always gets the same value. Conversions to uniform floats in (0, 1] and normals live here too.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/macros.h"

namespace moh {

struct Philox4 {
  uint32_t v[4];
};

MOH_HOST_DEVICE MOH_FORCE_INLINE void philox_mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t p = uint64_t(a) * uint64_t(b);
  hi = uint32_t(p >> 32);
  lo = uint32_t(p);
}

// Ten rounds of Philox4x32 on counter (c0..c3) with 64-bit key.
MOH_HOST_DEVICE inline Philox4 philox4x32(uint64_t key, uint64_t counter_lo, uint64_t counter_hi) {
  uint32_t c0 = uint32_t(counter_lo), c1 = uint32_t(counter_lo >> 32);
  uint32_t c2 = uint32_t(counter_hi), c3 = uint32_t(counter_hi >> 32);
  uint32_t k0 = uint32_t(key), k1 = uint32_t(key >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    philox_mulhilo(0xD2511F53u, c0, hi0, lo0);
    philox_mulhilo(0xCD9E8D57u, c2, hi1, lo1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// Uniform float in (0, 1]: 24 random bits, never exactly 0 (safe for log in Box-Muller).
MOH_HOST_DEVICE MOH_FORCE_INLINE float philox_uniform(uint32_t x) {
  return float((x >> 8) + 1u) * (1.0f / 16777216.0f);
}

// Uniform double in (0, 1] from two words (53 random bits).
MOH_HOST_DEVICE MOH_FORCE_INLINE double philox_uniform_double(uint32_t a, uint32_t b) {
  uint64_t bits = (uint64_t(a) << 21) ^ uint64_t(b >> 11);
  return double((bits & ((uint64_t(1) << 53) - 1)) + 1) * (1.0 / 9007199254740992.0);
}

// Element i of a random stream lives in word (i % 4) of counter (offset + i / 4); `stream`
// separates independent uses of one generator position (kept 0 by the generic factories).
MOH_HOST_DEVICE MOH_FORCE_INLINE uint32_t philox_word(uint64_t seed, uint64_t offset, uint64_t i,
                                                      uint64_t stream = 0) {
  Philox4 r = philox4x32(seed, offset + i / 4, stream);
  return r.v[i % 4];
}

// Standard normal for element i: Box-Muller on the word pair (2j, 2j+1) of counter offset + i/2,
// using cos for even i and sin for odd i.
MOH_HOST_DEVICE inline float philox_normal(uint64_t seed, uint64_t offset, uint64_t i) {
  Philox4 r = philox4x32(seed, offset + i / 2, 1);
  float u1 = philox_uniform(r.v[0]);
  float u2 = philox_uniform(r.v[1]);
  float radius = sqrtf(-2.0f * logf(u1));
  float angle = 6.283185307179586f * u2;
  return (i % 2 == 0) ? radius * cosf(angle) : radius * sinf(angle);
}

}  // namespace moh
