// Finite-difference checks of every elementwise function: binary arithmetic with broadcasting
// in both directions and strided operands, scalar forms and operators, unary math,
// activations, clamp, where, masked_fill and dtype casts.
#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;
using agt::transposed_leaf;
using Inputs = std::vector<Variable>;

Tensor mask(const std::vector<uint8_t>& v, const Shape& shape) {
  return from_vector<uint8_t>(v, shape, DType::Bool);
}

TEST(GradcheckElementwise, AddBroadcast) {
  EXPECT_GRADCHECK([](const Inputs& in) { return add(in[0], in[1]); },
                   {transposed_leaf({2, 3}, 1), leaf({3}, 2)});
  EXPECT_GRADCHECK([](const Inputs& in) { return add(in[0], in[1]); }, {leaf({2, 1, 3}, 3), leaf({4, 1}, 4)});
}

TEST(GradcheckElementwise, SubBroadcast) {
  EXPECT_GRADCHECK([](const Inputs& in) { return sub(in[0], in[1]); },
                   {leaf({2, 1}, 5), transposed_leaf({2, 3}, 6)});
  EXPECT_GRADCHECK([](const Inputs& in) { return sub(in[0], in[1]); }, {leaf({}, 7), leaf({3, 2}, 8)});
}

TEST(GradcheckElementwise, MulBroadcast) {
  EXPECT_GRADCHECK([](const Inputs& in) { return mul(in[0], in[1]); },
                   {transposed_leaf({3, 2}, 9), leaf({3, 1}, 10)});
  EXPECT_GRADCHECK([](const Inputs& in) { return mul(in[0], in[0]); }, {leaf({4}, 11)});
  // Only one factor requires grad (the other is not saved).
  Variable constant(leaf({2, 3}, 12).data());
  EXPECT_GRADCHECK([&](const Inputs& in) { return mul(constant, in[0]); }, {leaf({3}, 13)});
}

TEST(GradcheckElementwise, DivBroadcast) {
  EXPECT_GRADCHECK([](const Inputs& in) { return div(in[0], in[1]); },
                   {leaf({2, 3}, 14), leaf({2, 1}, 15, 0.5, 1.5)});
  EXPECT_GRADCHECK([](const Inputs& in) { return div(in[0], in[1]); },
                   {leaf({3}, 16), transposed_leaf({2, 3}, 17, 0.5, 2)});
}

TEST(GradcheckElementwise, ScalarFormsAndOperators) {
  EXPECT_GRADCHECK([](const Inputs& in) { return add(in[0], 2.5); }, {leaf({2, 3}, 18)});
  EXPECT_GRADCHECK([](const Inputs& in) { return sub(in[0], 2.5); }, {leaf({2, 3}, 19)});
  EXPECT_GRADCHECK([](const Inputs& in) { return mul(in[0], -1.5); }, {leaf({2, 3}, 20)});
  EXPECT_GRADCHECK([](const Inputs& in) { return div(in[0], 4.0); }, {leaf({2, 3}, 21)});
  EXPECT_GRADCHECK([](const Inputs& in) { return (1.0 - in[0]) * in[1] / 3.0 + 2.0 * in[0] - in[1] * 0.5; },
                   {leaf({2, 3}, 22), leaf({3}, 23)});
  EXPECT_GRADCHECK([](const Inputs& in) { return -in[0] + (in[0] + 1.0) / in[1] - 1.0; },
                   {leaf({3}, 24), leaf({3}, 25, 1, 2)});
}

TEST(GradcheckElementwise, Pow) {
  for (double p : {2.0, 3.0, 0.5, -1.5, 1.0})
    EXPECT_GRADCHECK([p](const Inputs& in) { return pow(in[0], p); },
                     {transposed_leaf({2, 3}, 26, 0.5, 2.0)});
  // Exponent 0: a constant; the gradient is zero even at x = 0.
  Variable x(zeros({3}, DType::Float64), true);
  backward(sum(pow(x, 0.0)));
  EXPECT_EQ(agt::values(x.grad().defined() ? x.grad() : zeros({3}, DType::Float64)),
            std::vector<double>(3, 0.0));
}

TEST(GradcheckElementwise, Neg) {
  EXPECT_GRADCHECK([](const Inputs& in) { return neg(in[0]); }, {transposed_leaf({2, 3}, 27)});
}

TEST(GradcheckElementwise, Abs) {
  // Values stay away from 0, where abs has no derivative.
  EXPECT_GRADCHECK([](const Inputs& in) { return abs(in[0]); }, {transposed_leaf({2, 3}, 29, 0.2, 1.0)});
  EXPECT_GRADCHECK([](const Inputs& in) { return abs(in[0]); }, {transposed_leaf({2, 3}, 30, -1.0, -0.2)});
  // At 0 the gradient is 0 (PyTorch's sign(0)); either side it is the sign.
  Variable x(from_vector<double>({-2, 0, 3}, {3}), true);
  backward(sum(abs(x)));
  EXPECT_EQ(agt::values(x.grad()), (std::vector<double>{-1, 0, 1}));
}

TEST(GradcheckElementwise, Exp) {
  EXPECT_GRADCHECK([](const Inputs& in) { return exp(in[0]); }, {transposed_leaf({2, 3}, 28)});
}

TEST(GradcheckElementwise, Log) {
  EXPECT_GRADCHECK([](const Inputs& in) { return log(in[0]); }, {transposed_leaf({2, 3}, 29, 0.3, 2.0)});
}

TEST(GradcheckElementwise, Sqrt) {
  EXPECT_GRADCHECK([](const Inputs& in) { return sqrt(in[0]); }, {leaf({2, 3}, 30, 0.3, 2.0)});
}

TEST(GradcheckElementwise, Rsqrt) {
  EXPECT_GRADCHECK([](const Inputs& in) { return rsqrt(in[0]); }, {leaf({2, 3}, 31, 0.3, 2.0)});
}

TEST(GradcheckElementwise, Tanh) {
  EXPECT_GRADCHECK([](const Inputs& in) { return tanh(in[0]); }, {leaf({2, 3}, 32, -2, 2)});
}

TEST(GradcheckElementwise, Sigmoid) {
  EXPECT_GRADCHECK([](const Inputs& in) { return sigmoid(in[0]); }, {leaf({2, 3}, 33, -3, 3)});
}

TEST(GradcheckElementwise, Relu) {
  EXPECT_GRADCHECK([](const Inputs& in) { return relu(in[0]); }, {transposed_leaf({3, 4}, 34)});
}

TEST(GradcheckElementwise, GeluExactAndTanh) {
  EXPECT_GRADCHECK([](const Inputs& in) { return gelu(in[0]); }, {leaf({3, 4}, 35, -3, 3)});
  EXPECT_GRADCHECK([](const Inputs& in) { return gelu(in[0], GeluApprox::Tanh); },
                   {transposed_leaf({3, 4}, 36, -3, 3)});
}

TEST(GradcheckElementwise, Silu) {
  EXPECT_GRADCHECK([](const Inputs& in) { return silu(in[0]); }, {transposed_leaf({3, 4}, 37, -3, 3)});
}

TEST(GradcheckElementwise, Clamp) {
  EXPECT_GRADCHECK([](const Inputs& in) { return clamp(in[0], -0.5, 0.5); }, {leaf({3, 4}, 38)});
  EXPECT_GRADCHECK([](const Inputs& in) { return clamp(in[0], -0.3, std::nullopt); }, {leaf({3, 4}, 39)});
  EXPECT_GRADCHECK([](const Inputs& in) { return clamp(in[0], std::nullopt, 0.2); },
                   {transposed_leaf({3, 4}, 40)});
}

TEST(GradcheckElementwise, WhereBroadcast) {
  Tensor cond = mask({1, 0, 1, 0, 0, 1}, {2, 1, 3});
  EXPECT_GRADCHECK([&](const Inputs& in) { return where(cond, in[0], in[1]); },
                   {leaf({2, 2, 3}, 41), leaf({3}, 42)});
  Tensor row = mask({0, 1, 1}, {3});
  EXPECT_GRADCHECK([&](const Inputs& in) { return where(row, in[0], in[1]); },
                   {leaf({1}, 43), transposed_leaf({2, 3}, 44)});
}

TEST(GradcheckElementwise, MaskedFill) {
  Tensor rows = mask({1, 0, 0, 1}, {4, 1});
  EXPECT_GRADCHECK([&](const Inputs& in) { return masked_fill(in[0], rows, -3.0); },
                   {transposed_leaf({4, 3}, 45)});
}

TEST(GradcheckElementwise, CastToFloat32AndBack) {
  // float32 rounding limits the finite differences: a larger step and tolerance.
  GradcheckOptions loose;
  loose.eps = 1e-2;
  loose.atol = 1e-4;
  EXPECT_GRADCHECK([](const Inputs& in) { return to(to(in[0], DType::Float32) * 3.0, DType::Float64); },
                   {leaf({2, 3}, 46)}, loose);
  EXPECT_GRADCHECK([](const Inputs& in) { return to(in[0], DType::Float64) * 2.0; }, {leaf({3}, 47)});
  Variable x(ones({2}, DType::Float32), true);
  Variable y = to(x, DType::Float64);
  EXPECT_EQ(y.dtype(), DType::Float64);
  backward(sum(y));
  EXPECT_EQ(x.grad().dtype(), DType::Float32);
  EXPECT_EQ(agt::values(x.grad()), (std::vector<double>{1, 1}));
}

}  // namespace
}  // namespace moh::ag
