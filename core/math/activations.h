// Per-element activation math shared by the CPU and CUDA backends: sigmoid, GELU (erf and tanh
// forms, PyTorch definitions), SiLU and their derivatives. Each function computes in T (float or
// double); the *_grad functions return f'(x), which the fused backward kernels scale by grad_out.
// Float32 GELU (erf form) uses normal_cdf_f32 and fast_exp, and float32 sigmoid (so SiLU and GELU's
// tanh form) uses fast_exp: plain arithmetic the compiler vectorises (libm's erff and expf are scalar
// calls); float64 keeps std::erf and std::exp.
#pragma once

#include <cmath>
#include <type_traits>

#include "core/macros.h"
#include "core/math/fast_exp.h"

namespace moh {

// e^x for x <= 0, exactly 0 where float32 underflows (fast_exp alone floors at about e^-87).
MOH_HOST_DEVICE MOH_FORCE_INLINE float fast_exp_nonpositive(float x) {
  return fast_exp_blend(x < -87.0f, 0.0f, fast_exp(x));
}

// Phi(x) = 0.5 erfc(-x / sqrt 2) in float32 with a relative error, not just an absolute one, so
// GELU's left tail stays accurate: about 1e-6 for |x| < 4, growing to 8e-6 near x = -12 (the float32
// rounding of the exponent's argument). erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2),
// z = |x| / sqrt 2 >= 0 (Numerical Recipes' erfcc, fractional error < 1.2e-7 in exact arithmetic);
// z^2 enters exactly (an fma split) since its rounding would be amplified by the exponential.
MOH_HOST_DEVICE MOH_FORCE_INLINE float normal_cdf_f32(float x) {
  float a = fast_exp_blend(x < 0.0f, -x, x);
  a = fast_exp_blend(a > 14.0f, 14.0f, a);  // Phi(-14) underflows float32 anyway; keeps a^2 finite
  const float z = a * 0.70710678118654752440f;
  const float t = 1.0f / (1.0f + 0.5f * z);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  const float a2 = a * a, a2_low = std::fma(a, a, -a2);  // a^2 = a2 + a2_low exactly; z^2 = a^2 / 2
  const float tail = 0.5f * t * fast_exp_nonpositive((p - 0.5f * a2) - 0.5f * a2_low);  // 0.5 erfc(z)
  return fast_exp_blend(x < 0.0f, tail, 1.0f - tail);
}

// 1 / (1 + e^-x). In float32 fast_exp's clamp of its argument to [-87, 88] keeps the result within
// float32 rounding for |x| <= 87; below -88 the exact value is under 6e-39 and this returns 6e-39.
template <class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE T sigmoid_fn(T x) {
  if constexpr (std::is_same_v<T, float>) return 1.0f / (1.0f + fast_exp(-x));
  using std::exp;
  return T(1) / (T(1) + exp(-x));
}

// GELU, exact form: 0.5 x (1 + erf(x / sqrt 2)).
template <class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE T gelu_erf(T x) {
  if constexpr (std::is_same_v<T, float>) return x * normal_cdf_f32(x);
  using std::erf;
  return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440)));
}

// d/dx of gelu_erf: Phi(x) + x phi(x).
template <class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE T gelu_erf_grad(T x) {
  if constexpr (std::is_same_v<T, float>)
    return normal_cdf_f32(x) + x * fast_exp_nonpositive(-0.5f * x * x) * 0.39894228040143267794f;
  using std::erf;
  using std::exp;
  const T cdf = T(0.5) * (T(1) + erf(x * T(0.70710678118654752440)));
  const T pdf = exp(T(-0.5) * x * x) * T(0.39894228040143267794);  // 1 / sqrt(2 pi)
  return cdf + x * pdf;
}

// GELU, tanh approximation: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), evaluated
// through the identity 0.5 (1 + tanh(u)) = sigmoid(2u): one exp instead of a (much slower) tanh,
// and well conditioned everywhere (the tanh only ever enters as 1 + tanh).
template <class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE T gelu_tanh_inner(T x) {
  return T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);
}

template <class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE T gelu_tanh(T x) {
  return x * sigmoid_fn(T(2) * gelu_tanh_inner(x));
}

// d/dx = s + x s (1 - s) du/dx * 2 with s = sigmoid(2u), since 1 - tanh(u)^2 = 4 s (1 - s).
template <class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE T gelu_tanh_grad(T x) {
  const T s = sigmoid_fn(T(2) * gelu_tanh_inner(x));
  const T du = T(0.79788456080286535588) * (T(1) + T(3 * 0.044715) * x * x);
  return s + T(2) * x * s * (T(1) - s) * du;
}

// SiLU (swish): x sigmoid(x).
template <class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE T silu_fn(T x) {
  return x * sigmoid_fn(x);
}

template <class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE T silu_grad(T x) {
  const T s = sigmoid_fn(x);
  return s * (T(1) + x * (T(1) - s));
}

}  // namespace moh
