// CPU elementwise kernels (binary, compare, unary, clamp, where). Front ends in core/ops/ check
// shapes and dtypes and pass inputs already expanded to out's shape; out is either a fresh
// contiguous tensor or, for in-place ops, a non-broadcast view that inputs may alias exactly.
#pragma once

#include <optional>

#include "core/tensor.h"

namespace moh::cpu {

// clang-format off
enum class BinaryOp { Add, Sub, Mul, Div, Pow, Maximum, Minimum,
                      GeluErfBackward, GeluTanhBackward, SiluBackward };
enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge };
enum class UnaryOp { Neg, Abs, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Relu, GeluErf, GeluTanh, Silu,
                     LogicalNot };
// clang-format on

const char* op_name(BinaryOp op);
const char* op_name(CompareOp op);
const char* op_name(UnaryOp op);
// True for ops defined on float32/float64 only (the rest also take int32/int64; LogicalNot takes bool).
bool is_float_only(BinaryOp op);
bool is_float_only(UnaryOp op);

// out = op(a, b); the *Backward ops compute a * f'(b) with a = grad_out, b = x.
// Integer Div truncates toward zero (C++ semantics) and throws Error on a zero divisor.
void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b);
// out = a + alpha * b (alpha converted to the dtype).
void add_scaled(const Tensor& out, const Tensor& a, const Tensor& b, double alpha);
// out (bool) = a op b.
void compare(CompareOp op, const Tensor& out, const Tensor& a, const Tensor& b);
void unary(UnaryOp op, const Tensor& out, const Tensor& x);
// out = min(max(x, lo), hi) with absent bounds ignored; NaN stays NaN.
void clamp(const Tensor& out, const Tensor& x, std::optional<double> lo, std::optional<double> hi);
// out = cond ? a : b (cond bool).
void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);

}  // namespace moh::cpu
