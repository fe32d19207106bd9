// gradcheck itself: it passes a correct custom function, FAILS a deliberately wrong backward
// (naming the worst element), perturbs strided inputs correctly, leaves the caller's .grad
// alone, and rejects inputs it cannot check.
#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;

// x^2 with a backward of `factor` * g * x (2 is right).
Variable square(const Variable& x, double factor) {
  return record("square", moh::mul(x.data(), x.data()), {x},
                [x = x.data(), factor](const Tensor& g, const Needs&) {
                  return std::vector<Tensor>{moh::mul(moh::mul(g, x), factor)};
                });
}

TEST(Gradcheck, PassesACorrectBackward) {
  Variable x = leaf({3, 4}, 1);
  GradcheckResult r = gradcheck([](const std::vector<Variable>& in) { return square(in[0], 2.0); }, {x});
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(r.elements_checked, 12);
  EXPECT_LT(r.max_abs_error, 1e-8);
}

TEST(Gradcheck, FailsAWrongBackwardAndNamesTheWorstElement) {
  Variable x = leaf({3, 4}, 1, 0.5, 1.0), y = leaf({2}, 2);
  x.set_name("x");
  GradcheckResult r = gradcheck(
      [](const std::vector<Variable>& in) { return add(square(in[0], 1.0), sum(in[1]) * 0.0); }, {x, y});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.worst_input, 0);
  ASSERT_GE(r.worst_element, 0);
  EXPECT_NEAR(r.worst_analytic * 2.0, r.worst_numeric, 1e-6);  // half the true gradient
  EXPECT_GT(r.max_rel_error, 0.4);
  EXPECT_NE(r.message.find("FAILED"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("'x'"), std::string::npos) << r.message;
  // A slightly wrong backward is caught too.
  EXPECT_FALSE(gradcheck([](const std::vector<Variable>& in) { return square(in[0], 2.0 + 1e-4); }, {x}).ok);
}

TEST(Gradcheck, PerturbsStridedInputsAndKeepsCallerGradients) {
  Variable x = agt::transposed_leaf({3, 2}, 3);
  Tensor before = x.data().clone();
  x.set_grad(ones({3, 2}, DType::Float64));
  EXPECT_GRADCHECK([](const std::vector<Variable>& in) { return square(in[0], 2.0); }, {x});
  EXPECT_EQ(x.data().to_vector<double>(), before.to_vector<double>());  // restored exactly
  EXPECT_EQ(x.grad().to_vector<double>(), std::vector<double>(6, 1.0));
  EXPECT_EQ(tape_size(), 0u);
}

TEST(Gradcheck, RejectsInputsItCannotCheck) {
  auto identity = [](const std::vector<Variable>& in) { return in[0] * 1.0; };
  Generator gen(1);
  EXPECT_THROW(gradcheck(identity, {Variable(uniform({3}, -1, 1, gen), true)}), Error);  // float32
  Variable broadcast(uniform({1, 3}, -1, 1, gen, DType::Float64).expand({2, 3}), true);
  EXPECT_THROW(gradcheck(identity, {broadcast}), Error);
  Variable no_grad(uniform({3}, -1, 1, gen, DType::Float64));
  EXPECT_THROW(gradcheck(identity, {no_grad}), Error);  // the output requires no grad
  EXPECT_THROW(gradcheck(identity, {Variable()}), Error);
}

}  // namespace
}  // namespace moh::ag
