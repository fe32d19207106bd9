// Per-element activation math shared by the CPU and CUDA backends: sigmoid, GELU (erf and tanh
// forms, PyTorch definitions), SiLU and their derivatives. Each function computes in T (float or
// double); the *_grad functions return f'(x), which the fused backward kernels scale by grad_out.
#pragma once

#include <cmath>

#include "core/macros.h"

namespace moh {

template <class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE T sigmoid_fn(T x) {
  using std::exp;
  return T(1) / (T(1) + exp(-x));
}

// GELU, exact form: 0.5 x (1 + erf(x / sqrt 2)).
template <class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE T gelu_erf(T x) {
  using std::erf;
  return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440)));
}

// d/dx of gelu_erf: Phi(x) + x phi(x).
template <class T>
MOH_HOST_DEVICE MOH_FORCE_INLINE T gelu_erf_grad(T x) {
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
