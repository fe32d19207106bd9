// Front ends of the elementwise ops: argument checks (defined, one device, one dtype, broadcastable
// shapes, dtype family; CUDA also takes bfloat16/float16 wherever float32 is), output allocation and
// kernel dispatch. Scalars become 0-d tensors of the operand's dtype (integer dtypes need a finite,
// in-range scalar; the value is truncated).
// In-place ops write through `self`; an `other` that overlaps self differently is copied first.
#include "core/kernels/elementwise.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops.h"
#include "core/ops/checks.h"

namespace moh {
namespace {

void check_defined(const char* op, const Tensor& t, const char* what) {
  MOH_CHECK(t.defined(), op, ": ", what, " is an undefined tensor");
}

void check_pair(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a, "first operand");
  check_defined(op, b, "second operand");
  MOH_CHECK(a.device() == b.device(), op, ": operands on different devices: ", describe(a), " and ",
            describe(b));
  MOH_CHECK(a.dtype() == b.dtype(), op, ": dtypes differ: ", describe(a), " and ", describe(b),
            " (no implicit promotion; convert with Tensor::to)");
}

// Float math: float32/float64, plus bfloat16/float16 on CUDA (is_math_float).
void check_float(const char* op, const Tensor& t) {
  MOH_CHECK(is_math_float(t), op, ": expected a ", math_float_names(t), " tensor, got ", describe(t));
}

// Arithmetic and comparisons: the math floats and int32/int64.
void check_numeric(const char* op, const Tensor& t) {
  MOH_CHECK(is_math_float(t) || t.dtype() == DType::Int32 || t.dtype() == DType::Int64, op, ": expected a ",
            math_numeric_names(t), " tensor, got ", describe(t));
}

// A 0-d tensor holding `value` converted to like's dtype.
Tensor scalar_like(const char* op, double value, const Tensor& like) {
  check_defined(op, like, "tensor operand");
  if (!is_floating(like.dtype()) && like.dtype() != DType::Bool) {
    double lo = like.dtype() == DType::Int32   ? -2147483648.0
                : like.dtype() == DType::Int64 ? -9223372036854775808.0
                                               : 0;
    double hi = like.dtype() == DType::Int32   ? 2147483648.0
                : like.dtype() == DType::Int64 ? 9223372036854775808.0
                                               : 256;
    MOH_CHECK(std::isfinite(value) && value >= lo && value < hi, op, ": scalar ", value, " does not fit ",
              describe(like));
  }
  return scalar_tensor(value, like.dtype(), like.device());
}

void check_writable(const char* op, const Tensor& self) {
  check_defined(op, self, "self");
  for (size_t d = 0; d < self.shape().size(); ++d)
    MOH_CHECK(self.strides()[d] != 0 || self.shape()[d] <= 1, op,
              ": cannot write into a broadcast (expanded) view ", describe(self));
}

// `other` expanded to self's shape, copied when it shares memory with self in a different layout.
Tensor operand_for_inplace(const char* op, const Tensor& self, const Tensor& other) {
  check_pair(op, self, other);
  MOH_CHECK(broadcast_shapes(self.shape(), other.shape(), op) == self.shape(), op, ": ", describe(other),
            " does not broadcast to self ", describe(self));
  Tensor src = other.expand(self.shape());
  bool same_view = src.offset() == self.offset() && src.strides() == self.strides();
  if (other.shares_storage(self) && !same_view) src = other.clone().expand(self.shape());
  return src;
}

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = op_name(op);
  check_pair(name, a, b);
  if (is_float_only(op))
    check_float(name, a);
  else
    check_numeric(name, a);
  Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  MOH_BACKEND(out.device(), binary, op, out, a.expand(shape), b.expand(shape));
  return out;
}

Tensor binary_scalar(BinaryOp op, const Tensor& a, double b) {
  return binary_op(op, a, scalar_like(op_name(op), b, a));
}

Tensor compare_op(CompareOp op, const Tensor& a, const Tensor& b) {
  const char* name = op_name(op);
  check_pair(name, a, b);
  check_numeric(name, a);
  Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  Tensor out = Tensor::empty(shape, DType::Bool, a.device());
  MOH_BACKEND(out.device(), compare, op, out, a.expand(shape), b.expand(shape));
  return out;
}

Tensor compare_scalar(CompareOp op, const Tensor& a, double b) {
  return compare_op(op, a, scalar_like(op_name(op), b, a));
}

Tensor unary_op(UnaryOp op, const Tensor& x) {
  const char* name = op_name(op);
  check_defined(name, x, "input");
  if (op == UnaryOp::LogicalNot)
    MOH_CHECK(x.dtype() == DType::Bool, name, ": expected a bool tensor, got ", describe(x));
  else if (is_float_only(op))
    check_float(name, x);
  else
    check_numeric(name, x);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  MOH_BACKEND(out.device(), unary, op, out, x);
  return out;
}

Tensor activation_backward(BinaryOp op, const Tensor& grad_out, const Tensor& x) {
  const char* name = op_name(op);
  check_pair(name, grad_out, x);
  MOH_CHECK(grad_out.shape() == x.shape(), name, ": grad_out ", describe(grad_out), " does not match x ",
            describe(x));
  return binary_op(op, grad_out, x);
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Pow, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::Minimum, a, b); }
Tensor add(const Tensor& a, double b) { return binary_scalar(BinaryOp::Add, a, b); }
Tensor sub(const Tensor& a, double b) { return binary_scalar(BinaryOp::Sub, a, b); }
Tensor mul(const Tensor& a, double b) { return binary_scalar(BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, double b) { return binary_scalar(BinaryOp::Div, a, b); }

Tensor pow(const Tensor& a, double exponent) {
  if (exponent == 2.0 && a.defined() && is_floating(a.dtype())) {
    check_float("pow", a);
    return mul(a, a);  // the common square, without std::pow per element
  }
  return binary_scalar(BinaryOp::Pow, a, exponent);
}

Tensor eq(const Tensor& a, const Tensor& b) { return compare_op(CompareOp::Eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare_op(CompareOp::Ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare_op(CompareOp::Lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return compare_op(CompareOp::Le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare_op(CompareOp::Gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare_op(CompareOp::Ge, a, b); }
Tensor eq(const Tensor& a, double b) { return compare_scalar(CompareOp::Eq, a, b); }
Tensor ne(const Tensor& a, double b) { return compare_scalar(CompareOp::Ne, a, b); }
Tensor lt(const Tensor& a, double b) { return compare_scalar(CompareOp::Lt, a, b); }
Tensor le(const Tensor& a, double b) { return compare_scalar(CompareOp::Le, a, b); }
Tensor gt(const Tensor& a, double b) { return compare_scalar(CompareOp::Gt, a, b); }
Tensor ge(const Tensor& a, double b) { return compare_scalar(CompareOp::Ge, a, b); }
Tensor logical_not(const Tensor& mask) { return unary_op(UnaryOp::LogicalNot, mask); }

Tensor neg(const Tensor& x) { return unary_op(UnaryOp::Neg, x); }
Tensor abs(const Tensor& x) { return unary_op(UnaryOp::Abs, x); }
Tensor exp(const Tensor& x) { return unary_op(UnaryOp::Exp, x); }
Tensor log(const Tensor& x) { return unary_op(UnaryOp::Log, x); }
Tensor sqrt(const Tensor& x) { return unary_op(UnaryOp::Sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary_op(UnaryOp::Rsqrt, x); }
Tensor tanh(const Tensor& x) { return unary_op(UnaryOp::Tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary_op(UnaryOp::Sigmoid, x); }
Tensor relu(const Tensor& x) { return unary_op(UnaryOp::Relu, x); }
Tensor silu(const Tensor& x) { return unary_op(UnaryOp::Silu, x); }

Tensor gelu(const Tensor& x, GeluApprox approx) {
  return unary_op(approx == GeluApprox::Tanh ? UnaryOp::GeluTanh : UnaryOp::GeluErf, x);
}

Tensor gelu_backward(const Tensor& grad_out, const Tensor& x, GeluApprox approx) {
  return activation_backward(
      approx == GeluApprox::Tanh ? BinaryOp::GeluTanhBackward : BinaryOp::GeluErfBackward, grad_out, x);
}

Tensor silu_backward(const Tensor& grad_out, const Tensor& x) {
  return activation_backward(BinaryOp::SiluBackward, grad_out, x);
}

Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max) {
  check_defined("clamp", x, "input");
  check_numeric("clamp", x);
  // Validates that the bounds fit an integer dtype.
  if (min) scalar_like("clamp", *min, x);
  if (max) scalar_like("clamp", *max, x);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  MOH_BACKEND(out.device(), clamp, out, x, min, max);
  return out;
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_defined("where", cond, "cond");
  check_pair("where", a, b);
  MOH_CHECK(cond.dtype() == DType::Bool, "where: cond must be a bool tensor, got ", describe(cond));
  MOH_CHECK(cond.device() == a.device(), "where: cond ", describe(cond), " is not on the device of ",
            describe(a));
  Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  MOH_BACKEND(out.device(), where, out, cond.expand(shape), a.expand(shape), b.expand(shape));
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  check_defined("masked_fill", x, "input");
  check_defined("masked_fill", mask, "mask");
  MOH_CHECK(mask.dtype() == DType::Bool, "masked_fill: mask must be a bool tensor, got ", describe(mask));
  MOH_CHECK(mask.device() == x.device(), "masked_fill: mask ", describe(mask), " is not on the device of ",
            describe(x));
  MOH_CHECK(broadcast_shapes(x.shape(), mask.shape(), "masked_fill") == x.shape(), "masked_fill: mask ",
            describe(mask), " does not broadcast to ", describe(x));
  Tensor fill = scalar_like("masked_fill", value, x).expand(x.shape());
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  MOH_BACKEND(out.device(), where, out, mask.expand(x.shape()), fill, x);
  return out;
}

void add_(Tensor& self, const Tensor& other, double alpha) {
  check_writable("add_", self);
  check_numeric("add_", self);
  Tensor src = operand_for_inplace("add_", self, other);
  if (alpha == 1.0) {
    MOH_BACKEND(self.device(), binary, BinaryOp::Add, self, self, src);
  } else {
    scalar_like("add_", alpha, self);  // alpha must fit an integer dtype
    MOH_BACKEND(self.device(), add_scaled, self, self, src, alpha);
  }
}

void mul_(Tensor& self, const Tensor& other) {
  check_writable("mul_", self);
  check_numeric("mul_", self);
  Tensor src = operand_for_inplace("mul_", self, other);
  MOH_BACKEND(self.device(), binary, BinaryOp::Mul, self, self, src);
}

void mul_(Tensor& self, double value) {
  check_writable("mul_", self);
  mul_(self, scalar_like("mul_", value, self));
}

}  // namespace moh
