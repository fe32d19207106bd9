// Helpers shared by the trainer tests: a tiny two-layer MLP module (PyTorch names fc1.*, fc2.*),
// the MSE loss written with autograd ops, named leaves with set gradients, exact tensor equality
// and an error check that looks for a phrase in the message.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "core/factory.h"
#include "core/random.h"
#include "layers/linear.h"
#include "tests/test_util.h"
#include "trainers/optimizer.h"

namespace moh::trainer_test {

// y = fc2(tanh(fc1(x))), with random (non-zero) biases.
class TinyMlp : public Module {
 public:
  TinyMlp(int64_t in, int64_t hidden, int64_t out, DType dtype, uint64_t seed) {
    Generator gen(seed);
    fc1 = register_module("fc1", std::make_shared<Linear>(
                                     LinearOptions{.in_features = in, .out_features = hidden, .dtype = dtype}, gen));
    fc2 = register_module("fc2", std::make_shared<Linear>(
                                     LinearOptions{.in_features = hidden, .out_features = out, .dtype = dtype}, gen));
    for (const auto* lin : {fc1.get(), fc2.get()}) {
      Tensor b = lin->bias().data();
      b.copy_(uniform(b.shape(), -0.5, 0.5, gen, dtype));
    }
  }
  std::string type_name() const override { return "TinyMlp"; }
  ag::Variable forward(const ag::Variable& x) const { return fc2->forward(ag::tanh(fc1->forward(x))); }

  std::shared_ptr<Linear> fc1, fc2;
};

inline ag::Variable mse(const ag::Variable& y, const Tensor& target) {
  ag::Variable d = y - ag::Variable(target);
  return ag::mean(d * d);
}

// A leaf requiring grad, named, holding `values`, with gradient `grad` (when not empty).
inline ag::Variable named_leaf(const std::string& name, const std::vector<double>& values, const Shape& shape,
                               const std::vector<double>& grad = {}, DType dtype = DType::Float64) {
  ag::Variable v(from_vector(values, shape, dtype), true);
  v.set_name(name);
  if (!grad.empty()) v.set_grad(from_vector(grad, shape, dtype));
  return v;
}

inline void set_grad(ag::Variable& v, const std::vector<double>& grad) {
  v.set_grad(from_vector(grad, v.shape(), v.dtype()));
}

// Bitwise-equal values (same shape).
inline void expect_identical(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  EXPECT_EQ(a.to_vector<double>(), b.to_vector<double>()) << what;
}

// Expects fn to throw moh::Error with `phrase` in its message.
inline void expect_error(const std::function<void()>& fn, const std::string& phrase) {
  test::expect_error(fn, {phrase});
}

}  // namespace moh::trainer_test
