// The elementwise op kinds both backends implement (core/kernels/elementwise.h) and the op front
// ends (core/ops/elementwise.cpp) pick: binary arithmetic, comparisons and unary math, with the name
// each reports in errors and the dtype family each takes. Backend-neutral: plain host code, no tensors.
#pragma once

namespace moh {

// clang-format off
enum class BinaryOp { Add, Sub, Mul, Div, Pow, Maximum, Minimum,
                      GeluErfBackward, GeluTanhBackward, SiluBackward };
enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge };
enum class UnaryOp { Neg, Abs, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Relu, GeluErf, GeluTanh, Silu,
                     LogicalNot };
// clang-format on

// The op's public name ("add", "gelu_backward", ...), for error messages.
inline const char* op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
    case BinaryOp::Pow: return "pow";
    case BinaryOp::Maximum: return "maximum";
    case BinaryOp::Minimum: return "minimum";
    case BinaryOp::GeluErfBackward:
    case BinaryOp::GeluTanhBackward: return "gelu_backward";
    case BinaryOp::SiluBackward: return "silu_backward";
  }
  return "binary op";
}

inline const char* op_name(CompareOp op) {
  switch (op) {
    case CompareOp::Eq: return "eq";
    case CompareOp::Ne: return "ne";
    case CompareOp::Lt: return "lt";
    case CompareOp::Le: return "le";
    case CompareOp::Gt: return "gt";
    case CompareOp::Ge: return "ge";
  }
  return "compare";
}

inline const char* op_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg: return "neg";
    case UnaryOp::Abs: return "abs";
    case UnaryOp::Exp: return "exp";
    case UnaryOp::Log: return "log";
    case UnaryOp::Sqrt: return "sqrt";
    case UnaryOp::Rsqrt: return "rsqrt";
    case UnaryOp::Tanh: return "tanh";
    case UnaryOp::Sigmoid: return "sigmoid";
    case UnaryOp::Relu: return "relu";
    case UnaryOp::GeluErf:
    case UnaryOp::GeluTanh: return "gelu";
    case UnaryOp::Silu: return "silu";
    case UnaryOp::LogicalNot: return "logical_not";
  }
  return "unary op";
}

// True for ops defined on the float dtypes only (the rest also take int32/int64; LogicalNot takes bool).
inline bool is_float_only(BinaryOp op) {
  return op == BinaryOp::Pow || op == BinaryOp::GeluErfBackward || op == BinaryOp::GeluTanhBackward ||
         op == BinaryOp::SiluBackward;
}

inline bool is_float_only(UnaryOp op) { return op != UnaryOp::Neg && op != UnaryOp::Abs && op != UnaryOp::LogicalNot; }

}  // namespace moh
