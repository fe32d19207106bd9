// 16-bit floating point storage types: BFloat16 and Float16 (IEEE binary16).
// Both are plain 16-bit payloads; arithmetic happens in float. Conversion from float rounds to
// nearest, ties to even; NaN stays NaN (quiet), overflow goes to infinity. Shared by both backends.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/macros.h"

namespace moh {

MOH_HOST_DEVICE MOH_FORCE_INLINE uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

MOH_HOST_DEVICE MOH_FORCE_INLINE float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  MOH_HOST_DEVICE explicit BFloat16(float f) : bits(round_from_float(f)) {}
  MOH_HOST_DEVICE operator float() const { return bits_float(uint32_t(bits) << 16); }

  MOH_HOST_DEVICE static uint16_t round_from_float(float f) {
    uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);  // quiet NaN
    uint32_t lsb = (u >> 16) & 1u;
    u += 0x7fffu + lsb;  // round to nearest, ties to even
    return uint16_t(u >> 16);
  }
};

struct Float16 {
  uint16_t bits = 0;

  Float16() = default;
  MOH_HOST_DEVICE explicit Float16(float f) : bits(round_from_float(f)) {}
  MOH_HOST_DEVICE operator float() const { return to_float(bits); }

  MOH_HOST_DEVICE static uint16_t round_from_float(float f) {
    uint32_t u = float_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);     // NaN
    if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);    // rounds to >= 65520: inf
    if (abs < 0x38800000u) {                                     // below 2^-14: subnormal or zero
      if (abs < 0x33000000u) return uint16_t(sign);              // below half the smallest subnormal
      uint32_t exp = abs >> 23;
      uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
      uint32_t shift = 126u - exp;                               // 14..24 for these exponents
      uint32_t half_mant = mant >> shift;
      uint32_t rem = mant & ((1u << shift) - 1u);
      uint32_t halfway = 1u << (shift - 1u);
      if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
      return uint16_t(sign | half_mant);
    }
    uint32_t lsb = (abs >> 13) & 1u;
    abs += 0x0fffu + lsb;                                        // round to nearest even at bit 13
    return uint16_t(sign | ((abs - 0x38000000u) >> 13));         // rebias 127 -> 15
  }

  MOH_HOST_DEVICE static float to_float(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0x1fu) return bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
      if (mant == 0) return bits_float(sign);
      float f = float(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
      return sign ? -f : f;
    }
    return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  }
};

}  // namespace moh
