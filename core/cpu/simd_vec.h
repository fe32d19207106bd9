// The CPU kernels' explicit SIMD vectors: GCC/Clang vector extensions of 32 bytes (AVX2 registers on
// x86-64-v3; the compiler splits them elsewhere) of float or double, with unaligned loads and stores
// and a broadcast. Arithmetic is the extensions' own (+, *, ... lane by lane).
#pragma once

#include <cstdint>
#include <cstring>

namespace moh::cpu::simd {

typedef float Float8 __attribute__((vector_size(32)));
typedef double Double4 __attribute__((vector_size(32)));

template <class T>
struct VecOf;
template <>
struct VecOf<float> {
  using type = Float8;
};
template <>
struct VecOf<double> {
  using type = Double4;
};

template <class T>
using Vec = typename VecOf<T>::type;

template <class T>
constexpr int64_t kLanes = int64_t(sizeof(Vec<T>) / sizeof(T));

template <class T>
inline Vec<T> load(const T* p) {
  Vec<T> v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

template <class T>
inline void store(T* p, const Vec<T>& v) {
  std::memcpy(p, &v, sizeof(v));
}

template <class T>
inline Vec<T> splat(T s) {
  if constexpr (kLanes<T> == 8) return Vec<T>{s, s, s, s, s, s, s, s};
  else return Vec<T>{s, s, s, s};
}

}  // namespace moh::cpu::simd
