// EMA of a module's parameters: values after updates computed by hand, copy_to, the state round
// trip and the name/shape errors.
#include <gtest/gtest.h>

#include "tests/core/nn_test_util.h"
#include "tests/trainers/trainer_test_util.h"
#include "trainers/ema.h"

namespace moh {
namespace {

using trainer_test::expect_error;
using trainer_test::TinyMlp;

void set_all(Module& m, double value) {
  for (auto& [_, p] : m.named_parameters()) {
    Tensor t = p.data();
    fill_(t, value);
  }
}

TEST(TrainerEma, AveragesByHand) {
  TinyMlp model(3, 4, 2, DType::Float64, 1);
  set_all(model, 1.0);
  Ema ema(model, 0.9);
  set_all(model, 2.0);
  ema.update(model);  // 0.9 * 1 + 0.1 * 2 = 1.1
  set_all(model, 0.0);
  ema.update(model);  // 0.9 * 1.1 = 0.99
  for (const auto& [name, t] : ema.state_dict()) {
    ASSERT_EQ(t.shape(), model.state_dict().at(name).shape()) << name;
    nn_test::expect_close(t, std::vector<double>(size_t(t.numel()), 0.99), 1e-15, name);
  }
  EXPECT_EQ(ema.state_dict().size(), 4u);
  EXPECT_EQ(ema.decay(), 0.9);
}

TEST(TrainerEma, StartsAsACopyAndCopiesBack) {
  TinyMlp model(3, 4, 2, DType::Float32, 2);
  const StateDict original = [&] {
    StateDict s;
    for (const auto& [k, v] : model.state_dict()) s[k] = v.clone();
    return s;
  }();
  Ema ema(model, 0.999);
  set_all(model, 5.0);  // the EMA holds its own copy
  TinyMlp other(3, 4, 2, DType::Float32, 3);
  ema.copy_to(other);
  for (const auto& [k, v] : original) trainer_test::expect_identical(other.state_dict().at(k), v, k);
  EXPECT_EQ(ema.state_dict().at("fc1.weight").dtype(), DType::Float32);
}

TEST(TrainerEma, StateRoundTripAndDecayOne) {
  TinyMlp model(3, 4, 2, DType::Float64, 4);
  Ema frozen(model, 1.0);
  set_all(model, 3.0);
  frozen.update(model);  // decay 1 keeps the start
  Ema ema(model, 0.5);
  ema.load_state_dict(frozen.state_dict());
  for (const auto& [k, v] : frozen.state_dict()) trainer_test::expect_identical(ema.state_dict().at(k), v, k);
  ema.update(model);
  const auto start = frozen.state_dict().at("fc2.bias").to_vector<double>();
  nn_test::expect_close(ema.state_dict().at("fc2.bias"), {0.5 * start[0] + 1.5, 0.5 * start[1] + 1.5}, 1e-15,
                        "after loading");
}

TEST(TrainerEma, MismatchesThrowNamingTheParameter) {
  TinyMlp model(3, 4, 2, DType::Float64, 5);
  Ema ema(model, 0.9);
  TinyMlp wider(3, 5, 2, DType::Float64, 5);
  expect_error([&] { ema.update(wider); }, "'fc1.bias' is float64[5]");
  expect_error([&] { ema.copy_to(wider); }, "'fc1.bias' is float64[5]");
  StateDict missing = ema.state_dict();
  missing.erase("fc2.bias");
  expect_error([&] { ema.load_state_dict(missing); }, "missing parameter 'fc2.bias'");
  StateDict extra = ema.state_dict();
  extra["fc3.bias"] = zeros({2}, DType::Float64);
  expect_error([&] { ema.load_state_dict(extra); }, "unexpected parameter 'fc3.bias'");
  expect_error([&] { Ema(model, 1.5); }, "decay");
  expect_error([&] { Ema(model, -0.1); }, "decay");
}

}  // namespace
}  // namespace moh
