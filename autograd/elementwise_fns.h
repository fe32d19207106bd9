// Differentiable elementwise functions (mirroring core/ops.h): arithmetic with NumPy broadcasting
// (input gradients are summed back to each input's shape by the engine), unary math,
// activations (gelu/silu use the fused backward ops), clamp, where, masked_fill and dtype casts.
// Operators + - * / are shorthands for add/sub/mul/div.
#pragma once

#include <optional>

#include "autograd/variable.h"
#include "core/ops.h"

namespace moh::ag {

Variable add(const Variable& a, const Variable& b);
Variable sub(const Variable& a, const Variable& b);
Variable mul(const Variable& a, const Variable& b);
Variable div(const Variable& a, const Variable& b);
Variable add(const Variable& a, double b);
Variable sub(const Variable& a, double b);
Variable mul(const Variable& a, double b);
Variable div(const Variable& a, double b);
Variable pow(const Variable& x, double exponent);

Variable neg(const Variable& x);
// The gradient is sign(x) (0 at x = 0, as PyTorch).
Variable abs(const Variable& x);
Variable exp(const Variable& x);
Variable log(const Variable& x);
Variable sqrt(const Variable& x);
Variable rsqrt(const Variable& x);
Variable tanh(const Variable& x);
Variable sigmoid(const Variable& x);
Variable relu(const Variable& x);
Variable gelu(const Variable& x, GeluApprox approx = GeluApprox::None);
Variable silu(const Variable& x);
// The gradient flows where min <= x <= max.
Variable clamp(const Variable& x, std::optional<double> min, std::optional<double> max);
// a where cond (a bool tensor) is true, else b; all three broadcast together.
Variable where(const Tensor& cond, const Variable& a, const Variable& b);
Variable masked_fill(const Variable& x, const Tensor& mask, double value);
// Cast; the gradient is cast back to the input dtype.
Variable to(const Variable& x, DType dtype);

inline Variable operator+(const Variable& a, const Variable& b) { return add(a, b); }
inline Variable operator-(const Variable& a, const Variable& b) { return sub(a, b); }
inline Variable operator*(const Variable& a, const Variable& b) { return mul(a, b); }
inline Variable operator/(const Variable& a, const Variable& b) { return div(a, b); }
inline Variable operator+(const Variable& a, double b) { return add(a, b); }
inline Variable operator-(const Variable& a, double b) { return sub(a, b); }
inline Variable operator*(const Variable& a, double b) { return mul(a, b); }
inline Variable operator/(const Variable& a, double b) { return div(a, b); }
inline Variable operator+(double a, const Variable& b) { return add(b, a); }
inline Variable operator-(double a, const Variable& b) { return add(neg(b), a); }
inline Variable operator*(double a, const Variable& b) { return mul(b, a); }
inline Variable operator-(const Variable& x) { return neg(x); }

}  // namespace moh::ag
