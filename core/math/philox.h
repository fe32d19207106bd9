// Philox4x32-10 counter-based random numbers (Salmon et al., SC'11), shared by both backends.
// A (key, counter) pair maps to four independent uint32 values; no state is carried between
// calls, so element i of a random tensor can be computed anywhere (CPU loop, CUDA thread)
// and always gets the same value. Conversions to uniform floats in (0, 1] and normals live here too.
// Bit-identical on both backends: the conversions use only IEEE-rounded +, *, /, sqrt and explicit
// fma (no libm transcendental, whose last bit differs between glibc and CUDA, and no a * b + c a
// compiler could contract on one backend and not the other).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/half.h"
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

// low + span * u with one rounding, how the random fills scale a uniform or normal draw.
MOH_HOST_DEVICE MOH_FORCE_INLINE double philox_affine(double low, double span, double u) {
  return std::fma(span, u, low);
}

// ln(u) for a normal float u > 0 (the uniforms above), in double: u = m 2^e with m in [sqrt(1/2),
// sqrt(2)), ln m = 2 atanh(s), s = (m - 1) / (m + 1) (exact numerator and denominator), |s| < 0.172;
// the atanh series through s^23 leaves a truncation error below 1e-19. Relative error ~1e-16.
MOH_HOST_DEVICE inline double philox_log(float u) {
  const uint32_t bits = float_bits(u);
  int e = int(bits >> 23) - 127;
  uint32_t mantissa = (bits & 0x7fffffu) | 0x3f800000u;  // m in [1, 2)
  if (mantissa > 0x3fb504f3u) {                            // m > sqrt(2): halve it
    mantissa -= 0x00800000u;
    ++e;
  }
  const double m = double(bits_float(mantissa));
  const double s = (m - 1.0) / (m + 1.0);
  const double z = s * s;
  double p = 1.0 / 23;  // Horner in z over 1 / (2j + 1)
  p = std::fma(p, z, 1.0 / 21);
  p = std::fma(p, z, 1.0 / 19);
  p = std::fma(p, z, 1.0 / 17);
  p = std::fma(p, z, 1.0 / 15);
  p = std::fma(p, z, 1.0 / 13);
  p = std::fma(p, z, 1.0 / 11);
  p = std::fma(p, z, 1.0 / 9);
  p = std::fma(p, z, 1.0 / 7);
  p = std::fma(p, z, 1.0 / 5);
  p = std::fma(p, z, 1.0 / 3);
  p = std::fma(p, z, 1.0);
  return std::fma(double(e), 0.69314718055994530942, (2.0 * s) * p);
}

// cos(x + q pi / 2) for x in [0, 2 pi] (q = 0: cos x; q = 3: sin x), in double: x is reduced by
// the nearest multiple n of pi/2 against a two-double pi/2 (fma-exact products, so the reduced
// argument keeps its relative accuracy near the zeros), then the Taylor series through y^18 and
// y^19 on |y| <= pi/4 (truncation below 1e-18). Relative error ~1e-16.
MOH_HOST_DEVICE inline double philox_cos_quadrant(double x, int q) {
  const int n = int(std::fma(x, 0.63661977236758134308, 0.5));  // round(x / (pi/2)), x >= 0
  double y = std::fma(-double(n), 1.5707963267948965580, x);
  y = std::fma(-double(n), 6.1232339957367658e-17, y);
  const double z = y * y;
  double c = -1.0 / 6402373705728000.0;  // -1/18!: Horner in z over (-1)^j / (2j)!
  c = std::fma(c, z, 1.0 / 20922789888000.0);
  c = std::fma(c, z, -1.0 / 87178291200.0);
  c = std::fma(c, z, 1.0 / 479001600.0);
  c = std::fma(c, z, -1.0 / 3628800.0);
  c = std::fma(c, z, 1.0 / 40320.0);
  c = std::fma(c, z, -1.0 / 720.0);
  c = std::fma(c, z, 1.0 / 24.0);
  c = std::fma(c, z, -0.5);
  c = std::fma(c, z, 1.0);
  double s = -1.0 / 121645100408832000.0;  // -1/19!: Horner in z over (-1)^j / (2j+1)!
  s = std::fma(s, z, 1.0 / 355687428096000.0);
  s = std::fma(s, z, -1.0 / 1307674368000.0);
  s = std::fma(s, z, 1.0 / 6227020800.0);
  s = std::fma(s, z, -1.0 / 39916800.0);
  s = std::fma(s, z, 1.0 / 362880.0);
  s = std::fma(s, z, -1.0 / 5040.0);
  s = std::fma(s, z, 1.0 / 120.0);
  s = std::fma(s, z, -1.0 / 6.0);
  s = std::fma(s, z, 1.0);
  const double sin_y = y * s, cos_y = c;
  switch ((n + q) & 3) {
    case 0: return cos_y;
    case 1: return -sin_y;
    case 2: return -cos_y;
    default: return sin_y;
  }
}

// Standard normal for element i: Box-Muller on the word pair (2j, 2j+1) of counter offset + i/2,
// using cos for even i and sin for odd i.
MOH_HOST_DEVICE inline float philox_normal(uint64_t seed, uint64_t offset, uint64_t i) {
  Philox4 r = philox4x32(seed, offset + i / 2, 1);
  float u1 = philox_uniform(r.v[0]);
  float u2 = philox_uniform(r.v[1]);
  float radius = sqrtf(-2.0f * float(philox_log(u1)));
  float angle = 6.283185307179586f * u2;
  return radius * float(philox_cos_quadrant(double(angle), i % 2 == 0 ? 0 : 3));
}

}  // namespace moh
