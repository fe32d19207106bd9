// Elementwise functions: forward through core/ops.h, backward closures that save only what the
// gradients of the inputs requiring grad need (a product saves a factor only when the other one
// requires grad). Broadcast gradients are returned in the output shape; the engine reduces them.
#include "autograd/elementwise_fns.h"

#include "autograd/tape.h"
#include "core/factory.h"

namespace moh::ag {
namespace {

using Grads = std::vector<Tensor>;

// A one-input function whose gradient is grad_of(grad_out).
template <class F>
Variable unary(const char* op, Tensor out, const Variable& x, F grad_of) {
  return record(op, std::move(out), {x},
                [grad_of = std::move(grad_of)](const Tensor& g, const Needs&) { return Grads{grad_of(g)}; });
}

}  // namespace

Variable add(const Variable& a, const Variable& b) {
  return record("add", moh::add(a.data(), b.data()), {a, b}, [](const Tensor& g, const Needs&) {
    return Grads{g, g};
  });
}

Variable sub(const Variable& a, const Variable& b) {
  return record("sub", moh::sub(a.data(), b.data()), {a, b}, [](const Tensor& g, const Needs& needs) {
    return Grads{g, needs[1] ? moh::neg(g) : Tensor()};
  });
}

Variable mul(const Variable& a, const Variable& b) {
  Tensor a_saved = saved_for(b, a.data()), b_saved = saved_for(a, b.data());
  return record(
      "mul", moh::mul(a.data(), b.data()), {a, b}, [a_saved, b_saved](const Tensor& g, const Needs& needs) {
        return Grads{needs[0] ? moh::mul(g, b_saved) : Tensor(), needs[1] ? moh::mul(g, a_saved) : Tensor()};
      });
}

// d(a/b)/db = -(a/b)/b: saves b and, when b requires grad, the output.
Variable div(const Variable& a, const Variable& b) {
  Tensor out = moh::div(a.data(), b.data());
  Tensor out_saved = saved_for(b, out);
  return record("div", out, {a, b}, [b_saved = b.data(), out_saved](const Tensor& g, const Needs& needs) {
    Tensor grad_a = moh::div(g, b_saved);
    Tensor grad_b = needs[1] ? moh::neg(moh::mul(grad_a, out_saved)) : Tensor();
    return Grads{needs[0] ? grad_a : Tensor(), grad_b};
  });
}

Variable add(const Variable& a, double b) {
  return unary("add", moh::add(a.data(), b), a, [](const Tensor& g) { return g; });
}

Variable sub(const Variable& a, double b) {
  return unary("sub", moh::sub(a.data(), b), a, [](const Tensor& g) { return g; });
}

Variable mul(const Variable& a, double b) {
  return unary("mul", moh::mul(a.data(), b), a, [b](const Tensor& g) { return moh::mul(g, b); });
}

Variable div(const Variable& a, double b) {
  return unary("div", moh::div(a.data(), b), a, [b](const Tensor& g) { return moh::div(g, b); });
}

Variable pow(const Variable& x, double exponent) {
  return unary("pow", moh::pow(x.data(), exponent), x, [x = x.data(), exponent](const Tensor& g) {
    if (exponent == 0.0) return Tensor();
    return moh::mul(moh::mul(g, moh::pow(x, exponent - 1.0)), exponent);
  });
}

Variable neg(const Variable& x) {
  return unary("neg", moh::neg(x.data()), x, [](const Tensor& g) { return moh::neg(g); });
}

Variable abs(const Variable& x) {
  return unary("abs", moh::abs(x.data()), x, [x = x.data()](const Tensor& g) {
    return moh::masked_fill(moh::where(moh::gt(x, 0.0), g, moh::neg(g)), moh::eq(x, 0.0), 0.0);
  });
}

Variable exp(const Variable& x) {
  Tensor out = moh::exp(x.data());
  return unary("exp", out, x, [out](const Tensor& g) { return moh::mul(g, out); });
}

Variable log(const Variable& x) {
  return unary("log", moh::log(x.data()), x, [x = x.data()](const Tensor& g) { return moh::div(g, x); });
}

Variable sqrt(const Variable& x) {
  Tensor out = moh::sqrt(x.data());
  return unary("sqrt", out, x, [out](const Tensor& g) { return moh::div(moh::mul(g, 0.5), out); });
}

// d x^-1/2 / dx = -0.5 * out^3.
Variable rsqrt(const Variable& x) {
  Tensor out = moh::rsqrt(x.data());
  return unary("rsqrt", out, x,
               [out](const Tensor& g) { return moh::mul(g, moh::mul(moh::pow(out, 3.0), -0.5)); });
}

// d tanh = 1 - out^2.
Variable tanh(const Variable& x) {
  Tensor out = moh::tanh(x.data());
  return unary("tanh", out, x,
               [out](const Tensor& g) { return moh::sub(g, moh::mul(moh::mul(g, out), out)); });
}

// d sigmoid = out * (1 - out) = out - out^2.
Variable sigmoid(const Variable& x) {
  Tensor out = moh::sigmoid(x.data());
  return unary("sigmoid", out, x,
               [out](const Tensor& g) { return moh::mul(g, moh::sub(out, moh::mul(out, out))); });
}

Variable relu(const Variable& x) {
  Tensor out = moh::relu(x.data());
  return unary("relu", out, x,
               [out](const Tensor& g) { return moh::masked_fill(g, moh::le(out, 0.0), 0.0); });
}

Variable gelu(const Variable& x, GeluApprox approx) {
  return unary("gelu", moh::gelu(x.data(), approx), x,
               [x = x.data(), approx](const Tensor& g) { return moh::gelu_backward(g, x, approx); });
}

Variable silu(const Variable& x) {
  return unary("silu", moh::silu(x.data()), x,
               [x = x.data()](const Tensor& g) { return moh::silu_backward(g, x); });
}

Variable clamp(const Variable& x, std::optional<double> min, std::optional<double> max) {
  return unary("clamp", moh::clamp(x.data(), min, max), x, [x = x.data(), min, max](const Tensor& g) {
    Tensor grad = g;
    if (min) grad = moh::masked_fill(grad, moh::lt(x, *min), 0.0);
    if (max) grad = moh::masked_fill(grad, moh::gt(x, *max), 0.0);
    return grad;
  });
}

Variable where(const Tensor& cond, const Variable& a, const Variable& b) {
  return record("where", moh::where(cond, a.data(), b.data()), {a, b},
                [cond](const Tensor& g, const Needs& needs) {
                  Tensor zero = scalar_tensor(0.0, g.dtype(), g.device());
                  return Grads{needs[0] ? moh::where(cond, g, zero) : Tensor(),
                               needs[1] ? moh::where(cond, zero, g) : Tensor()};
                });
}

Variable masked_fill(const Variable& x, const Tensor& mask, double value) {
  return unary("masked_fill", moh::masked_fill(x.data(), mask, value), x,
               [mask](const Tensor& g) { return moh::masked_fill(g, mask, 0.0); });
}

Variable to(const Variable& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  return unary("to", x.data().to(dtype), x, [from = x.dtype()](const Tensor& g) { return g.to(from); });
}

}  // namespace moh::ag
