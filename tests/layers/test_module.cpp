// Module registration, dotted names, train/eval, state-dict round trips and their errors,
// summaries, and the initialisers' distributions.
#include <gtest/gtest.h>

#include <cmath>

#include "core/factory.h"
#include "core/ops.h"
#include "layers/init.h"
#include "layers/module.h"

namespace moh {
namespace {

class Leaf : public Module {
 public:
  explicit Leaf(int64_t n) {
    weight = register_parameter("weight", zeros({n, 2}));
    register_buffer("steps", zeros({1}, DType::Int64));
  }
  std::string type_name() const override { return "Leaf"; }
  std::vector<std::string> no_weight_decay() const override { return {"weight"}; }
  ag::Variable weight;
};

class Tree : public Module {
 public:
  Tree() {
    for (int i = 0; i < 2; ++i) blocks.push_back(register_module(std::to_string(i), std::make_shared<Leaf>(3 + i)));
    head = register_module("head", std::make_shared<Leaf>(5));
    register_parameter("scale", ones({1}));
  }
  std::string type_name() const override { return "Tree"; }
  std::vector<std::shared_ptr<Leaf>> blocks;
  std::shared_ptr<Leaf> head;
};

TEST(Module, DottedNamesInRegistrationOrder) {
  Tree t;
  std::vector<std::string> names;
  for (auto& [name, v] : t.named_parameters()) {
    names.push_back(name);
    EXPECT_TRUE(v.requires_grad()) << name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"scale", "0.weight", "1.weight", "head.weight"}));
  EXPECT_EQ(t.num_parameters(), 1 + 6 + 8 + 10);
  EXPECT_EQ(t.named_buffers().size(), 3u);
  EXPECT_EQ(t.named_buffers()[2].first, "head.steps");
}

TEST(Module, TrainEvalRecurses) {
  Tree t;
  t.eval();
  EXPECT_FALSE(t.is_training());
  EXPECT_FALSE(t.head->is_training());
  t.train();
  EXPECT_TRUE(t.blocks[1]->is_training());
}

TEST(Module, EvalModeGuardRestoresTheModeAlsoOnAnException) {
  Tree t;
  try {
    EvalModeGuard guard(t);
    EXPECT_FALSE(t.blocks[0]->is_training());
    throw std::runtime_error("evaluation failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(t.is_training());
  EXPECT_TRUE(t.head->is_training());
  t.eval();
  { EvalModeGuard guard(t); }
  EXPECT_FALSE(t.is_training());  // restores the mode it found, not training
}

TEST(Module, NoWeightDecayNamesCollectEveryDescendantsDeclarations) {
  Tree t;
  EXPECT_EQ(t.no_weight_decay_names(), (std::vector<std::string>{"0.weight", "1.weight", "head.weight"}));
}

TEST(Module, StateDictRoundTripCopiesValues) {
  Tree a, b;
  Generator gen(3);
  for (auto& p : a.parameters()) init::normal(p, gen, 1.0);
  StateDict state = a.state_dict();
  EXPECT_EQ(state.size(), 7u);
  b.load_state_dict(state);
  EXPECT_EQ(b.head->weight.data().to_vector<float>(), a.head->weight.data().to_vector<float>());
  EXPECT_FALSE(b.head->weight.data().shares_storage(a.head->weight.data()));
}

TEST(Module, LoadStateDictNamesWhatIsWrongAndWritesNothing) {
  Tree a, b;
  StateDict state = a.state_dict();
  fill_(state["scale"], 7.0);
  StateDict missing = state;
  missing.erase("1.weight");
  try {
    b.load_state_dict(missing);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'1.weight'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(b.named_parameters()[0].second.data().item<float>(), 1.0f);  // untouched
  StateDict extra = state;
  extra["head.bias"] = zeros({5});
  EXPECT_THROW(b.load_state_dict(extra), Error);
  b.load_state_dict(extra, /*strict=*/false);
  EXPECT_EQ(b.named_parameters()[0].second.data().item<float>(), 7.0f);
  StateDict misshapen = state;
  misshapen["head.weight"] = zeros({5, 3});
  try {
    b.load_state_dict(misshapen, false);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[5, 2]"), std::string::npos) << e.what();
  }
}

TEST(Module, SummaryListsModulesAndCounts) {
  Tree t;
  std::string s = t.summary();
  EXPECT_NE(s.find("Tree  params=25"), std::string::npos) << s;
  EXPECT_NE(s.find("  head: Leaf  params=10"), std::string::npos) << s;
  EXPECT_NE(s.find("total parameters: 25"), std::string::npos) << s;
}

TEST(Module, DuplicateOrDottedNamesAreRejected) {
  class Bad : public Module {
   public:
    explicit Bad(const std::string& second) {
      register_parameter("w", zeros({1}));
      register_parameter(second, zeros({1}));
    }
    std::string type_name() const override { return "Bad"; }
  };
  EXPECT_THROW(Bad("w"), Error);
  EXPECT_THROW(Bad("a.b"), Error);
  EXPECT_NO_THROW(Bad("b"));
}

double sample_std(const std::vector<float>& v, double* mean_out, double* max_abs) {
  double mean = 0, var = 0;
  *max_abs = 0;
  for (float x : v) { mean += x; *max_abs = std::max(*max_abs, std::fabs(double(x))); }
  mean /= double(v.size());
  for (float x : v) var += (x - mean) * (x - mean);
  *mean_out = mean;
  return std::sqrt(var / double(v.size()));
}

TEST(Init, XavierAndTruncNormalHaveTheirDocumentedRanges) {
  Generator gen(11);
  ag::Variable w(zeros({300, 200}), true);
  init::xavier_uniform(w, gen);
  double mean, max_abs;
  const double bound = std::sqrt(6.0 / 500.0);
  double std = sample_std(w.data().to_vector<float>(), &mean, &max_abs);
  EXPECT_LE(max_abs, bound);
  EXPECT_NEAR(std, bound / std::sqrt(3.0), 0.01 * bound);
  EXPECT_NEAR(mean, 0.0, 0.01 * bound);

  init::trunc_normal(w, gen, 0.02);
  std = sample_std(w.data().to_vector<float>(), &mean, &max_abs);
  EXPECT_LE(max_abs, 0.04 + 1e-7);
  EXPECT_NEAR(std, 0.02 * 0.8796, 0.0005);  // std of N(0,1) truncated to [-2, 2] is 0.8796
  init::ones(w);
  EXPECT_EQ(w.data().to_vector<float>()[123], 1.0f);
  ag::Variable v(zeros({4}), true);
  EXPECT_THROW(init::xavier_uniform(v, gen), Error);
}

}  // namespace
}  // namespace moh
