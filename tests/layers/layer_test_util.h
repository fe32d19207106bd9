// Helpers shared by the layer tests: PyTorch golden fixtures (tests/reference/
// make_layer_fixtures.py, nn_<family>.safetensors), a gradcheck of a module's forward with respect
// to its input and all of its parameters, and error checks that look for the layer's name.
// (EXPECT_GRADCHECK for plain functions comes from tests/autograd/autograd_test_util.h.)
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "autograd/autograd.h"
#include "core/io/safetensors.h"
#include "layers/module.h"
#include "tests/autograd/autograd_test_util.h"
#include "tests/core/nn_test_util.h"
#include "tests/test_paths.h"

namespace moh::layer_test {

using Forward = std::function<ag::Variable(const ag::Variable&)>;

struct Fixture {
  std::map<std::string, Tensor> tensors;
  Tensor operator[](const std::string& key) const {
    auto it = tensors.find(key);
    if (it == tensors.end()) throw Error("layer fixture has no tensor '" + key + "'");
    return it->second;
  }
  // The "<name>.state.*" entries under their PyTorch names.
  StateDict state(const std::string& name) const {
    StateDict out;
    const std::string prefix = name + ".state.";
    for (const auto& [key, t] : tensors)
      if (key.starts_with(prefix)) out[key.substr(prefix.size())] = t;
    return out;
  }
};

inline Fixture load_fixture(const std::string& family) {
  return {load_safetensors(MOH_TEST_PATH(MOH_FIXTURE_DIR) + "/nn_" + family + ".safetensors")};
}

// Loads case `name` into `module` (strict: the names must be PyTorch's), runs forward on the float
// input, backpropagates the fixture's upstream gradient and compares the output, the input gradient
// and every parameter gradient with torch's, to rtol (closeness rule of nn_test_util.h).
inline void expect_matches_torch(Module& module, const Forward& forward, const Fixture& f,
                                 const std::string& name, double rtol = 1e-5) {
  module.load_state_dict(f.state(name));
  for (auto& p : module.parameters()) p.zero_grad();
  ag::Variable x(f[name + ".x"], true);
  ag::Variable y = forward(x);
  nn_test::expect_close(y.data(), f[name + ".out"], rtol, name + " out");
  ag::backward(y, f[name + ".grad_out"]);
  nn_test::expect_close(x.grad(), f[name + ".grad.x"], rtol, name + " grad x");
  for (auto& [pname, p] : module.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name << ": no gradient for " << pname;
    nn_test::expect_close(p.grad(), f[name + ".grad." + pname], rtol, name + " grad " + pname);
  }
}

// gradcheck of forward(x) with respect to x and every parameter of `module` (float64); gradcheck
// differentiates the parameters themselves, so the module may use them as it normally does.
inline ag::GradcheckResult gradcheck_module(const Module& module, const Forward& forward,
                                            const ag::Variable& x, const ag::GradcheckOptions& options = {}) {
  std::vector<ag::Variable> inputs{x};
  for (const ag::Variable& p : module.parameters()) inputs.push_back(p);
  return ag::gradcheck([&](const std::vector<ag::Variable>& in) { return forward(in[0]); }, inputs, options);
}

// A float64 input leaf, uniform in [-1, 1).
inline ag::Variable input64(const Shape& shape, uint64_t seed, bool requires_grad = true) {
  Generator gen(seed);
  return ag::Variable(uniform(shape, -1.0, 1.0, gen, DType::Float64), requires_grad);
}

}  // namespace moh::layer_test

#define EXPECT_MODULE_GRADCHECK(...)                                           \
  do {                                                                         \
    auto gradcheck_result_ = ::moh::layer_test::gradcheck_module(__VA_ARGS__); \
    EXPECT_TRUE(gradcheck_result_.ok) << gradcheck_result_.message;            \
    EXPECT_GT(gradcheck_result_.elements_checked, 0);                          \
  } while (0)

// The statement throws moh::Error whose message contains `text` (the layer's name, a size, ...).
#define EXPECT_ERROR_MENTIONS(statement, text)                                    \
  do {                                                                            \
    try {                                                                         \
      statement;                                                                  \
      ADD_FAILURE() << #statement " did not throw";                               \
    } catch (const ::moh::Error& e) {                                             \
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what(); \
    }                                                                             \
  } while (0)
