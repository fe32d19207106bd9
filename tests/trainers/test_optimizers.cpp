// AdamW and SGD: first steps computed by hand, later steps against a scalar double reference,
// float32 and large (OpenMP) parameters, decay groups, skipped parameters, gradient accumulation,
// state export/import (a resumed run equals the uninterrupted one bit for bit) and every error.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/core/nn_test_util.h"
#include "tests/trainers/trainer_test_util.h"
#include "trainers/adamw.h"
#include "trainers/schedule.h"
#include "trainers/sgd.h"

namespace moh {
namespace {

using trainer_test::expect_error;
using trainer_test::expect_identical;
using trainer_test::named_leaf;
using trainer_test::TinyMlp;

const std::vector<double> kP0 = {1.0, -2.0, 0.5, 3.0};
const std::vector<double> kG1 = {0.5, -1.0, 0.0, 2.0};
const std::vector<double> kG2 = {-0.25, 0.5, 1.0, 0.0};
const std::vector<double> kG3 = {0.125, 0.75, -0.5, -1.5};

void expect_values(const ag::Variable& v, const std::vector<double>& expected, double tol, const std::string& what) {
  std::vector<double> got = v.data().to_vector<double>();
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << what << " element " << i;
}

// torch.optim.AdamW on one scalar, in double.
struct AdamRef {
  double p, m = 0, v = 0;
  int t = 0;
  void step(double g, double lr, double b1, double b2, double eps, double wd) {
    ++t;
    p *= 1 - lr * wd;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    const double mhat = m / (1 - std::pow(b1, t)), vhat = v / (1 - std::pow(b2, t));
    p -= lr * mhat / (std::sqrt(vhat) + eps);
  }
};

TEST(TrainerAdamW, FirstStepByHand) {
  // Step 1: m = (1-b1) g, v = (1-b2) g^2, so the update is lr * g / (|g| + eps) after p *= 1 - lr*wd.
  ag::Variable w = named_leaf("w", kP0, {2, 2}, kG1);
  AdamW opt({{"w", w}}, {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01});
  opt.step();
  expect_values(w, {0.999 - 0.1 * 0.5 / 0.50000001, -1.998 + 0.1 / 1.00000001, 0.4995, 2.997 - 0.2 / 2.00000001},
                1e-14, "step 1");
  EXPECT_NEAR(w.data().to_vector<double>()[0], 0.89900000200000000, 1e-14);
  EXPECT_NEAR(w.data().to_vector<double>()[3], 2.8970000005, 1e-14);
  auto state = opt.state_dict();
  expect_values(ag::Variable(state.at("w/exp_avg")), {0.05, -0.1, 0.0, 0.2}, 1e-15, "exp_avg");
  expect_values(ag::Variable(state.at("w/exp_avg_sq")), {0.00025, 0.001, 0.0, 0.004}, 1e-15, "exp_avg_sq");
  EXPECT_EQ(state.at("w/step").item<int64_t>(), 1);
  EXPECT_EQ(opt.step_count(), 1);
}

TEST(TrainerAdamW, ThreeStepsMatchScalarReferenceInBothDtypes) {
  for (DType dtype : {DType::Float64, DType::Float32}) {
    ag::Variable w = named_leaf("w", kP0, {2, 2}, {}, dtype);
    AdamW opt({{"w", w}}, {.lr = 0.1, .beta1 = 0.8, .beta2 = 0.95, .eps = 1e-6, .weight_decay = 0.05});
    std::vector<AdamRef> ref;
    for (double p : kP0) ref.push_back({p});
    for (const auto* g : {&kG1, &kG2, &kG3}) {
      trainer_test::set_grad(w, *g);
      opt.step();
      for (size_t i = 0; i < ref.size(); ++i) ref[i].step((*g)[i], 0.1, 0.8, 0.95, 1e-6, 0.05);
    }
    std::vector<double> expected;
    for (const auto& r : ref) expected.push_back(r.p);
    const bool f64 = dtype == DType::Float64;
    nn_test::expect_close(w.data(), expected, f64 ? 1e-14 : 2e-6, f64 ? "float64" : "float32");
    EXPECT_EQ(opt.state_dict().at("w/exp_avg").dtype(), dtype);
  }
}

TEST(TrainerAdamW, LargeParameterUsesThreadsAndMatchesReference) {
  Generator gen(7);
  const Shape shape{300, 150};  // 45000 elements: above the parallel grain
  ag::Variable w(uniform(shape, -1, 1, gen, DType::Float32), true);
  std::vector<double> p = w.data().to_vector<double>();
  std::vector<AdamRef> ref;
  for (double x : p) ref.push_back({x});
  AdamW opt({{"big.weight", w}}, {.lr = 0.01, .weight_decay = 0.1});
  for (int s = 0; s < 2; ++s) {
    Tensor g = normal(shape, 0, 1, gen, DType::Float32);
    w.set_grad(g);
    opt.step();
    std::vector<double> gv = g.to_vector<double>();
    for (size_t i = 0; i < ref.size(); ++i) ref[i].step(gv[i], 0.01, 0.9, 0.999, 1e-8, 0.1);
  }
  std::vector<double> expected;
  for (const auto& r : ref) expected.push_back(r.p);
  nn_test::expect_close(w.data(), expected, 1e-5, "large float32", 1e-6);
}

TEST(TrainerAdamW, NonContiguousGradientIsRead) {
  ag::Variable a = named_leaf("a", kP0, {2, 2}), b = named_leaf("b", kP0, {2, 2});
  Tensor g = from_vector(kG1, {2, 2}, DType::Float64);
  a.set_grad(g.t().contiguous());
  b.set_grad(g.t());  // same values, transposed strides
  ASSERT_FALSE(b.grad().is_contiguous());
  AdamW opt({{"a", a}, {"b", b}}, {.lr = 0.1});
  opt.step();
  expect_identical(a.data(), b.data(), "transposed gradient");
}

TEST(TrainerSgd, MomentumStepsByHand) {
  ag::Variable w = named_leaf("w", kP0, {2, 2}, kG1);
  Sgd opt({{"w", w}}, {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.1});
  opt.step();  // d = g + 0.1 p = [0.6, -1.2, 0.05, 2.3]; buf = d; p -= 0.1 d
  expect_values(w, {0.94, -1.88, 0.495, 2.77}, 1e-15, "step 1");
  trainer_test::set_grad(w, kG2);
  opt.step();  // d = [-0.156, 0.312, 1.0495, 0.277]; buf = 0.9 buf + d = [0.384, -0.768, 1.0945, 2.347]
  expect_values(w, {0.9016, -1.8032, 0.38555, 2.5353}, 1e-15, "step 2");
  expect_values(ag::Variable(opt.state_dict().at("w/momentum_buffer")), {0.384, -0.768, 1.0945, 2.347}, 1e-15,
                "momentum_buffer");
}

TEST(TrainerSgd, NesterovAndDampeningByHand) {
  ag::Variable n = named_leaf("n", kP0, {2, 2}, kG1);
  Sgd nesterov({{"n", n}}, {.lr = 0.1, .momentum = 0.9, .nesterov = true, .weight_decay = 0.1});
  nesterov.step();  // buf = d; d + 0.9 buf = 1.9 d
  expect_values(n, {0.886, -1.772, 0.4905, 2.563}, 1e-15, "nesterov step 1");

  // The first step copies the gradient into the buffer (no dampening), later ones dampen.
  ag::Variable d = named_leaf("d", kP0, {2, 2}, kG1);
  Sgd damped({{"d", d}}, {.lr = 0.1, .momentum = 0.9, .dampening = 0.5});
  damped.step();
  expect_values(d, {0.95, -1.9, 0.5, 2.8}, 1e-15, "dampened step 1");
  trainer_test::set_grad(d, kG2);
  damped.step();  // buf = 0.9 g1 + 0.5 g2 = [0.325, -0.65, 0.5, 1.8]
  expect_values(d, {0.9175, -1.835, 0.45, 2.62}, 1e-15, "dampened step 2");
}

TEST(TrainerSgd, PlainSgdHasNoStateAndLargeTensorsMatch) {
  Generator gen(8);
  const Shape shape{256, 160};
  ag::Variable w(uniform(shape, -1, 1, gen, DType::Float32), true);
  Tensor g = normal(shape, 0, 1, gen, DType::Float32);
  w.set_grad(g);
  std::vector<double> p = w.data().to_vector<double>(), gv = g.to_vector<double>(), expected;
  Sgd opt({{"w", w}}, {.lr = 0.5, .weight_decay = 0.01});
  EXPECT_TRUE(opt.state_names().empty());
  opt.step();
  for (size_t i = 0; i < p.size(); ++i) expected.push_back(p[i] - 0.5 * (gv[i] + 0.01 * p[i]));
  nn_test::expect_close(w.data(), expected, 1e-6, "sgd float32", 1e-7);
  EXPECT_EQ(opt.state_dict().size(), 2u);  // "w/step" and "step"
}

TEST(TrainerOptimizer, DecayExemptRules) {
  auto var = [](const Shape& shape) { return ag::Variable(zeros(shape), true); };
  EXPECT_TRUE(decay_exempt("fc.bias", var({4})));
  EXPECT_TRUE(decay_exempt("norm.weight", var({4})));
  EXPECT_TRUE(decay_exempt("scale", var({})));
  EXPECT_FALSE(decay_exempt("blocks.0.attn.qkv.weight", var({12, 4})));
  // Names decide nothing by themselves: an LLM's token embedding decays unless declared exempt.
  EXPECT_FALSE(decay_exempt("tok_embeddings.weight", var({10, 4})));
  EXPECT_FALSE(decay_exempt("pos_embed", var({1, 5, 4})));
  EXPECT_TRUE(decay_exempt("pos_embed", var({1, 5, 4}), {"pos_embed"}));
  EXPECT_FALSE(decay_exempt("patch_embed.proj.weight", var({4, 3, 2, 2})));
  EXPECT_FALSE(decay_exempt("blocks.0.ls1.gamma", var({4, 4})));
  EXPECT_TRUE(decay_exempt("blocks.0.ls1.gamma", var({4, 4}), {"gamma"}));
  EXPECT_TRUE(decay_exempt("blocks.0.ls1.gamma", var({4, 4}), {"ls1.gamma"}));
  EXPECT_TRUE(decay_exempt("head.w", var({4, 4}), {"head.w"}));
  EXPECT_FALSE(decay_exempt("blocks.0.ls1.xgamma", var({4, 4}), {"gamma"}));  // suffixes are whole parts
  EXPECT_FALSE(decay_exempt("head.w", var({4, 4}), {""}));
  EXPECT_THROW(decay_exempt("x", ag::Variable()), Error);
}

TEST(TrainerOptimizer, NoDecayGroupIsLeftUntouchedByDecay) {
  // Zero gradients: AdamW's update is 0, so only the decoupled decay moves a parameter.
  NamedParameters params = {{"fc.weight", named_leaf("fc.weight", kP0, {2, 2}, {0, 0, 0, 0})},
                            {"fc.bias", named_leaf("fc.bias", {1, 2}, {2}, {0, 0})},
                            {"pos_embed", named_leaf("pos_embed", kP0, {1, 2, 2}, {0, 0, 0, 0})},
                            {"blocks.0.ls1.gamma", named_leaf("g", kP0, {2, 2}, {0, 0, 0, 0})}};
  AdamW opt(params, {.lr = 0.1, .weight_decay = 0.5, .no_decay = {"pos_embed", "gamma"}});
  std::vector<bool> decay;
  for (const auto& p : opt.params()) decay.push_back(p.decay);
  EXPECT_EQ(decay, std::vector<bool>({true, false, false, false}));
  opt.step();
  std::vector<double> shrunk;
  for (double p : kP0) shrunk.push_back(p * 0.95);
  EXPECT_EQ(params[0].second.data().to_vector<double>(), shrunk);
  EXPECT_EQ(params[1].second.data().to_vector<double>(), std::vector<double>({1, 2}));
  EXPECT_EQ(params[2].second.data().to_vector<double>(), kP0);
  EXPECT_EQ(params[3].second.data().to_vector<double>(), kP0);

  // SGD's coupled decay follows the same groups.
  NamedParameters sgd_params = {{"fc.weight", named_leaf("a", kP0, {2, 2}, {0, 0, 0, 0})},
                                {"fc.bias", named_leaf("b", {1, 2}, {2}, {0, 0})}};
  Sgd sgd(sgd_params, {.lr = 0.1, .weight_decay = 0.5});
  sgd.step();
  std::vector<double> sgd_shrunk;
  for (double p : kP0) sgd_shrunk.push_back(p - 0.1 * (0.5 * p));
  EXPECT_EQ(sgd_params[0].second.data().to_vector<double>(), sgd_shrunk);
  EXPECT_EQ(sgd_params[1].second.data().to_vector<double>(), std::vector<double>({1, 2}));
}

TEST(TrainerOptimizer, ParametersWithoutGradientAreSkippedAndCountTheirOwnSteps) {
  ag::Variable a = named_leaf("a", kP0, {2, 2}, kG1), b = named_leaf("b", kP0, {2, 2});
  AdamW opt({{"a", a}, {"b", b}}, {.lr = 0.1, .weight_decay = 0.01});
  opt.step();
  opt.step();
  EXPECT_EQ(b.data().to_vector<double>(), kP0);  // not even decayed
  EXPECT_EQ(opt.params()[0].steps, 2);
  EXPECT_EQ(opt.params()[1].steps, 0);
  trainer_test::set_grad(b, kG1);
  a.zero_grad();
  opt.step();  // b's first update: bias correction with t = 1
  expect_values(b, {0.999 - 0.1 * 0.5 / 0.50000001, -1.998 + 0.1 / 1.00000001, 0.4995, 2.997 - 0.2 / 2.00000001},
                1e-14, "b's first step");
  EXPECT_EQ(opt.params()[1].steps, 1);
  EXPECT_EQ(opt.step_count(), 3);
}

TEST(TrainerOptimizer, FrozenParametersAreLeftOutAndTiedWeightsKeptOnce) {
  ag::Variable w = named_leaf("w", kP0, {2, 2}, kG1);
  ag::Variable frozen(from_vector(kP0, {2, 2}, DType::Float64), false);
  AdamW opt({{"emb.weight", w}, {"frozen", frozen}, {"head.weight", w}}, {.lr = 0.1, .weight_decay = 0});
  ASSERT_EQ(opt.params().size(), 1u);
  EXPECT_EQ(opt.params()[0].name, "emb.weight");
  opt.step();  // updated once: exactly the first-step value
  EXPECT_NEAR(w.data().to_vector<double>()[0], 1.0 - 0.1 * 0.5 / 0.50000001, 1e-15);
  EXPECT_EQ(opt.state_dict().count("frozen/exp_avg"), 0u);
}

TEST(TrainerOptimizer, ZeroGradAndAccumulationSumGradients) {
  // Two micro-batches whose losses are scaled by 1/2 (the trainer's job) give the full-batch
  // gradient; unscaled they give twice it, since the optimizer divides by nothing.
  TinyMlp model(3, 4, 2, DType::Float64, 1);
  Generator gen(2);
  Tensor x = uniform({4, 3}, -1, 1, gen, DType::Float64), t = uniform({4, 2}, -1, 1, gen, DType::Float64);
  AdamW opt(model.named_parameters(), {.lr = 0.01});
  ag::backward(trainer_test::mse(model.forward(ag::Variable(x)), t));
  std::vector<Tensor> full;
  for (const auto& [_, p] : model.named_parameters()) full.push_back(p.grad().clone());
  for (double scale : {0.5, 1.0}) {
    opt.zero_grad();
    for (const auto& [_, p] : model.named_parameters()) EXPECT_FALSE(p.grad().defined());
    for (int64_t half = 0; half < 2; ++half) {
      ag::Variable xs(x.narrow(0, 2 * half, 2));
      ag::backward(trainer_test::mse(model.forward(xs), t.narrow(0, 2 * half, 2)) * scale);
    }
    size_t i = 0;
    for (const auto& [name, p] : model.named_parameters())
      nn_test::expect_close(p.grad(), mul(full[i++], 2 * scale), 1e-13, name + " accumulated");
  }
}

// Trains `model` for `steps` steps from optimizer step `opt.step_count()` on data drawn from the
// step index, with the lr from a warmup-cosine schedule.
void train(TinyMlp& model, Optimizer& opt, int steps) {
  const ScheduleOptions sched{.kind = ScheduleKind::Cosine, .base_lr = 0.05, .min_lr = 0.001, .warmup_steps = 2,
                              .total_steps = 8};
  for (int i = 0; i < steps; ++i) {
    Generator gen(100 + uint64_t(opt.step_count()));
    Tensor x = uniform({5, 3}, -1, 1, gen), t = uniform({5, 2}, -1, 1, gen);
    opt.zero_grad();
    ag::backward(trainer_test::mse(model.forward(ag::Variable(x)), t));
    opt.set_lr(lr_at(sched, opt.step_count()));
    opt.step();
  }
}

template <class Make>
void expect_resume_is_exact(const Make& make) {
  TinyMlp a(3, 4, 2, DType::Float32, 1);
  auto opt_a = make(a);
  train(a, *opt_a, 3);
  StateDict model_snapshot, opt_snapshot;
  for (const auto& [k, v] : a.state_dict()) model_snapshot[k] = v.clone();
  for (const auto& [k, v] : opt_a->state_dict()) opt_snapshot[k] = v.clone();
  train(a, *opt_a, 4);

  TinyMlp b(3, 4, 2, DType::Float32, 9);
  b.load_state_dict(model_snapshot);
  auto opt_b = make(b);
  opt_b->load_state_dict(opt_snapshot);
  EXPECT_EQ(opt_b->step_count(), 3);
  train(b, *opt_b, 4);
  for (const auto& [k, v] : a.state_dict()) expect_identical(b.state_dict().at(k), v, opt_a->type_name() + " " + k);
  for (const auto& [k, v] : opt_a->state_dict())
    expect_identical(opt_b->state_dict().at(k), v, opt_a->type_name() + " state " + k);

  // Without the optimizer state the continuation differs.
  TinyMlp c(3, 4, 2, DType::Float32, 9);
  c.load_state_dict(model_snapshot);
  auto opt_c = make(c);
  train(c, *opt_c, 4);
  EXPECT_NE(c.state_dict().at("fc1.weight").to_vector<double>(), a.state_dict().at("fc1.weight").to_vector<double>());
}

TEST(TrainerOptimizer, ResumedRunEqualsUninterruptedRunBitForBit) {
  expect_resume_is_exact([](TinyMlp& m) {
    return std::make_unique<AdamW>(m.named_parameters(), AdamWOptions{.lr = 0.05, .weight_decay = 0.1});
  });
  expect_resume_is_exact([](TinyMlp& m) {
    return std::make_unique<Sgd>(m.named_parameters(), SgdOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 0.1});
  });
}

// Two optimizers sharded over complementary element ranges (rank 0 the front of each parameter, rank
// 1 the rest; fc1.bias wholly on rank 1), whose updates are exchanged after each step as
// DataParallel's all-gather does, train exactly like one whole optimizer; a whole state_dict loads
// into a shard as its range.
template <class Make>
void expect_shards_equal_whole(const Make& make) {
  TinyMlp whole(3, 4, 2, DType::Float32, 1), shard0(3, 4, 2, DType::Float32, 1), shard1(3, 4, 2, DType::Float32, 1);
  auto opt = make(whole);
  auto opt0 = make(shard0), opt1 = make(shard1);
  std::vector<std::pair<int64_t, int64_t>> ranges0, ranges1;
  for (const Optimizer::Param& p : opt->params()) {
    const int64_t n = p.var.numel(), front = p.name == "fc1.bias" ? 0 : n / 2 + 1;
    ranges0.emplace_back(0, front);
    ranges1.emplace_back(front, n - front);
  }
  opt0->shard(ranges0);
  opt1->shard(ranges1);
  EXPECT_TRUE(opt0->sharded());
  EXPECT_EQ(opt0->state_bytes() + opt1->state_bytes(), opt->state_bytes());
  auto exchange = [&] {
    const auto p0 = opt0->params(), p1 = opt1->params();
    for (size_t j = 0; j < p0.size(); ++j) {
      Tensor a = p0[j].var.data().view({-1}), b = p1[j].var.data().view({-1});
      a.narrow(0, ranges1[j].first, ranges1[j].second).copy_(b.narrow(0, ranges1[j].first, ranges1[j].second));
      b.narrow(0, 0, ranges0[j].second).copy_(a.narrow(0, 0, ranges0[j].second));
    }
  };
  for (int i = 0; i < 3; ++i) {
    train(whole, *opt, 1);
    train(shard0, *opt0, 1);
    train(shard1, *opt1, 1);
    exchange();
  }
  for (const auto& [k, v] : whole.state_dict()) {
    expect_identical(shard0.state_dict().at(k), v, opt->type_name() + " " + k);
    expect_identical(shard1.state_dict().at(k), v, opt->type_name() + " " + k);
  }
  const auto full = opt->state_dict(), part = opt1->state_dict();
  opt0->load_state_dict(full);
  EXPECT_EQ(opt0->step_count(), 3);
  for (const std::string& state : opt->state_names())
    for (size_t j = 0; j < ranges1.size(); ++j) {
      const std::string key = opt->params()[j].name + "/" + state;
      const auto [offset, count] = ranges1[j];
      expect_identical(part.at(key), full.at(key).view({-1}).narrow(0, offset, count), "shard state " + key);
      expect_identical(opt0->state_dict().at(key), full.at(key).view({-1}).narrow(0, 0, ranges0[j].second),
                       "loaded shard " + key);
    }
}

TEST(TrainerOptimizer, ShardedOptimizersTogetherEqualTheWholeOne) {
  expect_shards_equal_whole([](TinyMlp& m) {
    return std::make_unique<AdamW>(m.named_parameters(), AdamWOptions{.lr = 0.05, .weight_decay = 0.1});
  });
  expect_shards_equal_whole([](TinyMlp& m) {
    return std::make_unique<Sgd>(m.named_parameters(), SgdOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 0.1});
  });
  TinyMlp model(3, 4, 2, DType::Float32, 1);
  AdamW opt(model.named_parameters(), {});
  expect_error([&] { opt.shard({{0, 1}}); }, "1 ranges for 4 parameters");
  expect_error([&] { opt.shard({{0, 12}, {2, 3}, {0, 8}, {0, 2}}); }, "range [2, 5) is outside parameter 'fc1.bias'");
}

TEST(TrainerOptimizer, StateDictNamesAndDtypes) {
  TinyMlp model(3, 4, 2, DType::Float32, 1);
  AdamW opt(model.named_parameters(), {});
  std::vector<std::string> keys;
  for (const auto& [k, v] : opt.state_dict()) {
    keys.push_back(k);
    if (k.ends_with("step")) EXPECT_EQ(v.dtype(), DType::Int64) << k;
    else EXPECT_EQ(v.dtype(), DType::Float32) << k;
  }
  const std::vector<std::string> expected = {
      "fc1.bias/exp_avg",   "fc1.bias/exp_avg_sq",   "fc1.bias/step",   "fc1.weight/exp_avg",
      "fc1.weight/exp_avg_sq", "fc1.weight/step",    "fc2.bias/exp_avg", "fc2.bias/exp_avg_sq",
      "fc2.bias/step",      "fc2.weight/exp_avg",    "fc2.weight/exp_avg_sq", "fc2.weight/step", "step"};
  EXPECT_EQ(keys, expected);
  EXPECT_EQ(opt.state_dict().at("fc1.weight/exp_avg").shape(), Shape({4, 3}));
}

TEST(TrainerOptimizer, LoadStateDictErrorsNameTheEntry) {
  TinyMlp model(3, 4, 2, DType::Float32, 1);
  AdamW opt(model.named_parameters(), {});
  const auto good = opt.state_dict();
  auto with = [&](const std::string& key, Tensor t) {
    auto s = good;
    if (t.defined()) s[key] = t;
    else s.erase(key);
    return s;
  };
  expect_error([&] { opt.load_state_dict(with("fc1.weight/exp_avg_sq", Tensor())); }, "fc1.weight/exp_avg_sq");
  expect_error([&] { opt.load_state_dict(with("fc2.bias/step", Tensor())); }, "missing entry 'fc2.bias/step'");
  expect_error([&] { opt.load_state_dict(with("step", Tensor())); }, "missing entry 'step'");
  expect_error([&] { opt.load_state_dict(with("fc1.weight/exp_avg", zeros({3, 4}))); }, "'fc1.weight/exp_avg' is");
  expect_error([&] { opt.load_state_dict(with("fc1.weight/momentum_buffer", zeros({4, 3}))); },
               "unexpected entry 'fc1.weight/momentum_buffer'");
  expect_error([&] { opt.load_state_dict(with("fc1.bias/step", scalar_tensor(-1, DType::Int64))); }, "fc1.bias/step");
  expect_error([&] { opt.load_state_dict(with("step", scalar_tensor(1.5, DType::Float64))); }, "non-negative integer");
  expect_error([&] { opt.load_state_dict(with("step", zeros({2}, DType::Int64))); }, "one step count");
  // A failed load changes nothing.
  EXPECT_EQ(opt.step_count(), 0);
  // float64 state loads into float32 (converted).
  auto converted = good;
  converted["fc1.bias/exp_avg"] = full({4}, 0.25, DType::Float64);
  opt.load_state_dict(converted);
  EXPECT_EQ(opt.state_dict().at("fc1.bias/exp_avg").to_vector<float>(), std::vector<float>(4, 0.25f));
}

TEST(TrainerOptimizer, BadArgumentsThrow) {
  ag::Variable w = named_leaf("w", kP0, {2, 2});
  const NamedParameters ps = {{"w", w}};
  expect_error([&] { AdamW(ps, {.lr = -1}); }, "learning rate");
  expect_error([&] { AdamW(ps, {.lr = NAN}); }, "learning rate");
  expect_error([&] { AdamW(ps, {.beta1 = 1.0}); }, "betas");
  expect_error([&] { AdamW(ps, {.beta2 = -0.1}); }, "betas");
  expect_error([&] { AdamW(ps, {.eps = 0}); }, "eps");
  expect_error([&] { AdamW(ps, {.weight_decay = -0.1}); }, "weight_decay");
  expect_error([&] { Sgd(ps, {.momentum = -0.5}); }, "momentum");
  expect_error([&] { Sgd(ps, {.dampening = 1.5}); }, "dampening");
  expect_error([&] { Sgd(ps, {.weight_decay = INFINITY}); }, "weight_decay");
  expect_error([&] { Sgd(ps, {.momentum = 0, .nesterov = true}); }, "nesterov");
  expect_error([&] { Sgd(ps, {.momentum = 0.9, .dampening = 0.1, .nesterov = true}); }, "nesterov");
  expect_error([&] { AdamW({{"w", w}, {"w", named_leaf("v", kP0, {2, 2})}}, {}); }, "'w' appears twice");
  expect_error([&] { AdamW({{"a/b", w}}, {}); }, "invalid parameter name 'a/b'");
  expect_error([&] { AdamW({{"u", ag::Variable()}}, {}); }, "'u' is undefined");
  ag::Variable strided(from_vector(kP0, {2, 2}, DType::Float64).t(), true);
  expect_error([&] { AdamW({{"s", strided}}, {}); }, "'s' is not contiguous");
  AdamW opt(ps, {});
  expect_error([&] { opt.set_lr(-0.1); }, "learning rate");
  EXPECT_EQ(opt.type_name(), "AdamW");
  EXPECT_EQ(Sgd(ps, {}).type_name(), "SGD");
}

}  // namespace
}  // namespace moh
