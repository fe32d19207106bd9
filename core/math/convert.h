// Element conversions shared by the CPU and CUDA kernels, so a cast or a fill stores the same bits
// on both backends. 16-bit floats (core/half.h) always convert through float.
//   convert<To>(v)     the cast of copy_/to(dtype): anything to bool is float(v) != 0, floats to
//                      ints truncate toward zero (out-of-range values are undefined, as in C++).
//   from_double<T>(v)  how a double scalar is stored (fill_, random draws): bool is v != 0.
#pragma once

#include <type_traits>

#include "core/half.h"
#include "core/macros.h"

namespace moh {

template <class T>
inline constexpr bool is_16bit_float_v = std::is_same_v<T, BFloat16> || std::is_same_v<T, Float16>;

template <class To, class From>
MOH_HOST_DEVICE MOH_FORCE_INLINE To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) return static_cast<float>(v) != 0.0f;
  else if constexpr (is_16bit_float_v<To>) return To(static_cast<float>(v));
  else if constexpr (is_16bit_float_v<From>) return static_cast<To>(static_cast<float>(v));
  else return static_cast<To>(v);
}

template <class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE T from_double(double v) {
  if constexpr (is_16bit_float_v<T>) return T(float(v));
  else if constexpr (std::is_same_v<T, bool>) return v != 0;
  else return static_cast<T>(v);
}

}  // namespace moh
