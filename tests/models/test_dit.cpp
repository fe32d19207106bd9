// DiT (models/dit): forward, balance losses and every gradient against the PyTorch twin's fixture
// (tests/reference/make_dit_fixture.py) in float64 and float32, forward_with_cfg against the twin and the
// manual combination, the adaLN-Zero initialisation (zero output, identity blocks), label dropout and forced
// drops, DiT's state-dict names and preset sizes (the per-block head counts of MoH-DiT-L/XL too), the FLOP count
// against the paper's Gflops, and the option and input checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "autograd/autograd.h"
#include "core/factory.h"
#include "layers/moh_attention.h"
#include "models/dit/dit.h"
#include "tests/core/golden_fixture.h"
#include "tests/core/nn_test_util.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using nn_test::expect_close;
using test::expect_error;

// The fixture's model: 8x8x4 input, patch 2, dim 16, depth 2, 4 heads, mlp_ratio 2, 5 classes (+ null).
DitOptions fixture_options(const std::string& model, DType dtype) {
  DitOptions o;
  o.input_size = 8, o.patch_size = 2, o.in_channels = 4, o.dim = 16, o.depth = 2, o.heads = 4, o.mlp_ratio = 2;
  o.num_classes = 5, o.class_dropout_prob = 0.1, o.dtype = dtype;
  if (model == "moh") o.attention.shared_heads = {1, 4}, o.attention.routed_topk = {2, 0};
  if (model == "moh_heads") {  // per-block head counts of a fixed width, as MoH-DiT-L/XL
    o.attention.heads = {3, 6}, o.head_dim = 4;
    o.attention.shared_heads = {1, 6}, o.attention.routed_topk = {1, 0};
  }
  return o;
}

StateDict fixture_state(const golden::Fixture& f, const std::string& model) {
  StateDict state;
  const std::string prefix = model + ".state.";
  for (const auto& [key, t] : f.tensors)
    if (key.rfind(prefix, 0) == 0) state[key.substr(prefix.size())] = t;
  return state;
}

// Random weights at a larger scale than the init (whose zero layers would make the output zero).
void randomise(Module& model, Generator& gen) {
  for (const auto& [name, p] : model.named_parameters()) {
    Tensor values = p.data();
    values.copy_(normal(p.shape(), 0, 0.2, gen, p.dtype()));
  }
}

// |actual - expected| <= tol * (|expected| + max |expected|): relative to each element and to the tensor's
// scale (float32 rounding through the modulated blocks is relative to the activations' size, so elements
// near zero carry errors of the scale's order).
void expect_near_scaled(const Tensor& actual, const Tensor& expected, double tol, const std::string& what) {
  double scale = 0;
  for (double v : expected.to_vector<double>()) scale = std::max(scale, std::abs(v));
  expect_close(actual, expected, tol, what, tol * scale);
}

void check_golden(const std::string& model, DType dtype) {
  const golden::Fixture f = golden::load("dit_small");
  const double tol = dtype == DType::Float64 ? 1e-10 : 1e-5, gtol = dtype == DType::Float64 ? 1e-8 : 1e-4;
  Generator gen(0);
  DiT dit(fixture_options(model, dtype), gen);
  dit.load_state_dict(fixture_state(f, model));  // strict: the twin's (DiT's) names, one for one
  ag::Variable x(f["x"].to(dtype), true);
  const DitOutput out = dit.forward(x, f["t"], f["y"], f["force_drop_ids"]);
  expect_near_scaled(out.out.data(), f[model + ".out"], tol, model + ".out");
  ag::Variable loss = ag::sum(ag::mul(out.out, ag::Variable(f["w"].to(dtype))));
  if (model != "mha") {
    ASSERT_EQ(out.balance_losses.size(), 1u);  // block 1 routes nothing (routed_topk 0)
    expect_close(out.balance_losses[0].data(), {f[model + ".balance"].to_vector<double>()[0]}, tol,
                 model + ".balance");
    loss = ag::add(loss, out.balance_losses[0]);
  } else {
    EXPECT_TRUE(out.balance_losses.empty());
  }
  ag::backward(loss);
  expect_near_scaled(x.grad(), f[model + ".grad.x"], gtol, model + ".grad.x");
  int checked = 0;
  for (const auto& [name, p] : dit.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    // Scaled: the qkv key bias's gradient is zero in exact arithmetic (softmax ignores a shift shared by all keys).
    expect_near_scaled(p.grad(), f[model + ".grad." + name], gtol, model + ".grad." + name);
    ++checked;
  }
  EXPECT_EQ(checked + 1, int(fixture_state(f, model).size()));  // every parameter, and the pos_embed buffer
  ag::NoGradGuard no_grad;
  dit.eval();  // no label dropout (the twin's guidance runs without it)
  const Tensor t0 = full({2}, f["t"].to_vector<double>()[0]);
  const Tensor y_cfg = from_vector<int64_t>({f["y"].to_vector<int64_t>()[0], 5}, {2});
  expect_near_scaled(dit.forward_with_cfg(ag::Variable(f["x"].to(dtype)), t0, y_cfg, 2.5, 3).data(),
                     f[model + ".cfg3"], tol, model + ".cfg3");
}

TEST(GoldenDit, MhaForwardGradientsAndGuidanceMatchPyTorchInFloat64) { check_golden("mha", DType::Float64); }
TEST(GoldenDit, MohForwardBalanceGradientsAndGuidanceMatchPyTorchInFloat64) { check_golden("moh", DType::Float64); }
TEST(GoldenDit, MhaMatchesPyTorchInFloat32) { check_golden("mha", DType::Float32); }
TEST(GoldenDit, MohMatchesPyTorchInFloat32) { check_golden("moh", DType::Float32); }
TEST(GoldenDit, PerBlockHeadCountsOfAFixedWidthMatchPyTorchInFloat64) { check_golden("moh_heads", DType::Float64); }
TEST(GoldenDit, PerBlockHeadCountsMatchPyTorchInFloat32) { check_golden("moh_heads", DType::Float32); }

TEST(Dit, AdaLnZeroStartsAtZeroOutputWithIdentityBlocks) {
  Generator gen(1), data(2);
  DitOptions o = fixture_options("moh", DType::Float64);
  const DiT dit(o, gen, std::make_shared<Generator>(9));  // training: labels drop, balance losses on
  const ag::Variable x(normal({3, 4, 8, 8}, 0, 1, data, DType::Float64));
  const Tensor t = from_vector<double>({0, 17.5, 999}, {3});
  const Tensor y = from_vector<int64_t>({0, 4, 5}, {3});
  const DitOutput out = dit.forward(x, t, y);
  EXPECT_EQ(out.out.shape(), (Shape{3, 8, 8, 8}));
  for (double v : out.out.data().to_vector<double>()) ASSERT_EQ(v, 0.0);
  // Every block is exactly the identity at initialisation (its gates are zero), whatever c is.
  const ag::Variable h(normal({3, 16, 16}, 0, 1, data, DType::Float64));
  const ag::Variable c(normal({3, 16}, 0, 1, data, DType::Float64));
  for (const auto& block : dit.blocks) {
    std::vector<ag::Variable> losses;
    test::expect_same_bytes(block->forward(h, c, losses).data(), h.data(), "block output");
  }
  // ... and DiT's other initial values: sin-cos pos_embed, zero biases, normal(0.02) label table.
  EXPECT_EQ(dit.state_dict().at("pos_embed").shape(), (Shape{1, 16, 16}));
  for (double v : dit.y_embedder->embedding_table->weight().data().to_vector<double>()) ASSERT_LT(std::abs(v), 0.2);
  for (double v : dit.t_embedder->fc1->bias().data().to_vector<double>()) ASSERT_EQ(v, 0.0);
  EXPECT_NE(dit.blocks[0]->mlp->fc1->weight().data().to_vector<double>()[0], 0.0);
  // MoH gates are xavier_uniform as every Linear (MoH-DiT's _basic_init): router [3, 16], bound sqrt(6 / 19).
  const StateDict state = dit.state_dict();
  double top = 0;
  for (double v : state.at("blocks.0.attn.router.weight").to_vector<double>()) top = std::max(top, std::abs(v));
  EXPECT_LE(top, std::sqrt(6.0 / 19));
  EXPECT_GT(top, 0.2);  // far outside the layer default's trunc_normal(0.02) range
}

TEST(Dit, LabelDropoutUsesTheNullClassAndForcedDropsOverrideIt) {
  Generator gen(1);
  const DitOptions o = fixture_options("mha", DType::Float64);
  const DiT dit(o, gen, std::make_shared<Generator>(5));
  const LabelEmbedder& labels = *dit.y_embedder;
  EXPECT_EQ(dit.state_dict().at("y_embedder.embedding_table.weight").shape(), (Shape{6, 16}));
  std::vector<int64_t> y(4000);
  for (size_t i = 0; i < y.size(); ++i) y[i] = int64_t(i % 5);
  const Tensor yt = from_vector<int64_t>(y, {int64_t(y.size())});
  Generator drops(7);
  const std::vector<int64_t> dropped = labels.dropped_labels(yt, true, {}, &drops);
  int64_t nulls = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    if (dropped[i] == 5) ++nulls;
    else ASSERT_EQ(dropped[i], y[i]);
  }
  EXPECT_NEAR(double(nulls) / double(y.size()), 0.1, 0.02);  // class_dropout_prob, +-4.2 sigma
  EXPECT_EQ(labels.dropped_labels(yt, false, {}, &drops), y);  // evaluation keeps every label
  // Forced drops replace exactly the marked labels, in training too (no random draws).
  const Tensor y3 = from_vector<int64_t>({2, 3, 4}, {3}), force = from_vector<int64_t>({1, 0, 1}, {3});
  EXPECT_EQ(labels.dropped_labels(y3, true, force, nullptr), (std::vector<int64_t>{5, 3, 5}));
  // The model's forward with a forced drop equals the forward with the null class given explicitly.
  DiT model(o, gen);
  randomise(model, drops);
  model.eval();
  const ag::Variable x(normal({3, 4, 8, 8}, 0, 1, drops, DType::Float64));
  const Tensor t = from_vector<double>({1, 2, 3}, {3});
  const Tensor forced = model.forward(x, t, y3, force).out.data();
  test::expect_same_bytes(forced, model.forward(x, t, from_vector<int64_t>({5, 3, 5}, {3})).out.data(), "forced");
  EXPECT_NE(forced.to_vector<double>(), model.forward(x, t, y3).out.data().to_vector<double>());
}

TEST(Dit, ForwardWithCfgIsTheGuidedCombinationOfBothHalves) {
  Generator gen(3), data(4);
  DiT dit(fixture_options("mha", DType::Float64), gen);
  randomise(dit, data);
  dit.eval();
  const ag::Variable x(normal({4, 4, 8, 8}, 0, 1, data, DType::Float64));
  const Tensor t = from_vector<double>({10, 250, 10, 250}, {4});
  const Tensor y = from_vector<int64_t>({1, 2, 5, 5}, {4});
  const double s = 4.0;
  const ag::Variable first = ag::narrow(x, 0, 0, 2);
  const Tensor out = dit.forward(ag::cat({first, first}, 0), t, y).out.data();
  const std::vector<double> o = out.to_vector<double>();
  for (int64_t channels : {int64_t(0), int64_t(3)}) {
    const std::vector<double> g = dit.forward_with_cfg(x, t, y, s, channels).data().to_vector<double>();
    const int64_t guided = channels == 0 ? 4 : channels, plane = 64, sample = 8 * plane;
    for (int64_t n = 0; n < 4; ++n)
      for (int64_t c = 0; c < 8; ++c)
        for (int64_t i = 0; i < plane; ++i) {
          const int64_t at = n * sample + c * plane + i, k = n % 2;  // the half's sample k
          const double cond = o[size_t(k * sample + c * plane + i)], uncond = o[size_t((k + 2) * sample + c * plane + i)];
          const double want = c < guided ? uncond + s * (cond - uncond) : o[size_t(at)];
          ASSERT_NEAR(g[size_t(at)], want, 1e-12) << "channels " << channels << " n " << n << " c " << c;
        }
  }
  expect_error<Error>([&] { dit.forward_with_cfg(ag::narrow(x, 0, 0, 3), t, y, s); }, {"even batch"});
  expect_error<Error>([&] { dit.forward_with_cfg(x, t, y, s, 5); }, {"cfg_channels 5", "[0, 4]"});
}

TEST(Dit, MohBlocksReturnBalanceLossesInTrainingOnly) {
  Generator gen(5), data(6);
  DitOptions o = fixture_options("mha", DType::Float32);
  o.attention.shared_heads = {1};
  o.attention.routed_topk = {2};
  DiT dit(o, gen, std::make_shared<Generator>(1));
  for (const auto& block : dit.blocks) EXPECT_NE(dynamic_cast<MoHAttention*>(block->attn.get()), nullptr);
  const ag::Variable x(normal({2, 4, 8, 8}, 0, 1, data));
  const Tensor t = from_vector<float>({1, 2}, {2});
  const Tensor y = from_vector<int64_t>({0, 1}, {2});
  const DitOutput train = dit.forward(x, t, y);
  ASSERT_EQ(train.balance_losses.size(), 2u);
  for (const auto& loss : train.balance_losses) EXPECT_GT(loss.data().item<double>(), 0.0);
  dit.eval();
  EXPECT_TRUE(dit.forward(x, t, y).balance_losses.empty());
}

TEST(Dit, NamesMatchDitsStateDict) {
  Generator gen(0);
  const DiT dit(dit_preset("fmnist"), gen);
  std::set<std::string> names;
  for (const auto& [name, t] : dit.state_dict()) names.insert(name);
  for (const char* name :
       {"x_embedder.proj.weight", "x_embedder.proj.bias", "pos_embed", "t_embedder.mlp.0.weight",
        "t_embedder.mlp.2.bias", "y_embedder.embedding_table.weight", "blocks.5.attn.qkv.weight",
        "blocks.5.attn.proj.bias", "blocks.0.mlp.fc1.weight", "blocks.0.mlp.fc2.bias",
        "blocks.0.adaLN_modulation.1.weight", "blocks.0.adaLN_modulation.1.bias", "final_layer.linear.weight",
        "final_layer.adaLN_modulation.1.bias"})
    EXPECT_TRUE(names.count(name)) << name;
  // DiT's LayerNorms have no affine parameters: 72 entries and 1,871,136 parameters, as the twin's.
  EXPECT_EQ(names.size(), 72u);
  EXPECT_EQ(dit.num_parameters(), 1871136);
}

TEST(Dit, PresetsHaveThePapersSizes) {
  // From the twin (tests/reference/make_dit_fixture.py prints them): DiT's 33M / 130M / 458M / 675M.
  EXPECT_EQ(dit_preset("DiT-L/2").depth, 24);
  EXPECT_EQ(dit_preset("DiT-XL/2").dim, 1152);
  for (const char* name : {"DiT-S/2", "DiT-B/2", "DiT-L/2", "DiT-XL/2", "MoH-DiT-S/2-90", "MoH-DiT-S/2-75",
                           "MoH-DiT-B/2-90", "MoH-DiT-B/2-75", "MoH-DiT-L/2-90", "MoH-DiT-L/2-75", "MoH-DiT-XL/2-90",
                           "MoH-DiT-XL/2-75", "fmnist"})
    EXPECT_NO_THROW(dit_preset(name).validate()) << name;  // the MoH lists fit depth and heads
  EXPECT_EQ(dit_preset("MoH-DiT-B/2-75").attention.routed_topk,
            (std::vector<int64_t>{2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 0, 0}));
  Generator gen(0);
  const DiT small(dit_preset("DiT-S/2"), gen);
  EXPECT_EQ(small.num_parameters(), 32865056);
  // DiT's Gflops (one per multiply-add) of DiT-S/2: 6.06.
  EXPECT_NEAR(small.forward_flops_per_sample().dense / 2 / 1e9, 6.06, 0.01);
  // MoH-DiT-S/2-90 computes 5 of 6 heads in its 8 routed blocks, all 6 in the last 4: 89% of the query rows.
  const DitOptions moh = dit_preset("MoH-DiT-S/2-90");
  EXPECT_NEAR(moh.attention.active_share(moh.depth, moh.heads), (8 * 5.0 / 6 + 4) / 12, 1e-12);
  // MoH-DiT-L/XL: 8, 16 and 24 heads per third, routed only in the later thirds; the names' 90 and 75 are
  // shares of all heads: XL-90 (9 * 8 + 10 * 16 + 9 * 19) / (9 * 8 + 10 * 16 + 9 * 24) = 403 / 448.
  const auto share = [](const char* name) {
    const DitOptions o = dit_preset(name);
    return o.attention.active_share(o.depth, o.heads);
  };
  EXPECT_NEAR(share("MoH-DiT-XL/2-90"), 403.0 / 448, 1e-12);
  EXPECT_NEAR(share("MoH-DiT-XL/2-75"), 0.75, 1e-12);
  EXPECT_NEAR(share("MoH-DiT-L/2-90"), 344.0 / 384, 1e-12);
  EXPECT_NEAR(share("MoH-DiT-L/2-75"), 0.75, 1e-12);
  const DitOptions xl = dit_preset("MoH-DiT-XL/2-75");
  EXPECT_EQ(xl.head_dim, 72);
  EXPECT_EQ(xl.attention.block_heads(8, xl.heads), 8);
  EXPECT_EQ(xl.attention.block_heads(9, xl.heads), 16);
  EXPECT_EQ(xl.attention.block_heads(27, xl.heads), 24);
  EXPECT_EQ(xl.attention.block(18, xl.depth)->shared_heads, 10);
  EXPECT_EQ(xl.attention.block(19, xl.depth)->shared_heads, 14);
  // The MoH count drops exactly the skipped heads' share (fmnist-sized: cheap to build).
  DitOptions o = dit_preset("fmnist");
  const DiT::Flops mha = DiT(o, gen).forward_flops_per_sample();
  o.attention.shared_heads = {1}, o.attention.routed_topk = {1};  // 2 of 4 heads per token
  const DiT routed(o, gen);
  const DiT::Flops f = routed.forward_flops_per_sample();
  const double t = 16, d = 128, per_head = t * (2 * d * 32 + 4 * t * 32 + 2 * 32 * d);
  const double gates = 2 * t * d * (3 + 2);  // router (3 routed heads) and stage gate, each block
  EXPECT_NEAR(f.dense, mha.dense + 6 * gates, 1e-6 * f.dense);
  EXPECT_NEAR(f.active, f.dense - 6 * 2 * per_head, 1e-6 * f.dense);
}

TEST(Dit, PerBlockHeadCountsShapeEachBlockAndItsFlops) {
  Generator gen(0);
  DitOptions o = dit_preset("fmnist");  // dim 128, 4 heads of 32, 16 tokens
  const DiT::Flops mha = DiT(o, gen).forward_flops_per_sample();
  o.attention.heads = {2, 4, 8, 2, 4, 8};
  o.head_dim = 16;
  const DiT dit(o, gen);
  for (int64_t b = 0; b < 6; ++b) {
    const AttentionOptions& a = dit.blocks[size_t(b)]->attn->options();
    EXPECT_EQ(a.num_heads, o.attention.heads[size_t(b)]);
    EXPECT_EQ(a.head_dim, 16);
    EXPECT_EQ(dit.blocks[size_t(b)]->attn->state_dict().at("qkv.weight").shape(), (Shape{3 * a.num_heads * 16, 128}));
    EXPECT_EQ(dit.blocks[size_t(b)]->attn->state_dict().at("proj.weight").shape(), (Shape{128, a.num_heads * 16}));
  }
  // Attention per block: keys and values t * 2d * 2 H dh, and per head t (2 d dh + 4 t dh + 2 dh d).
  const double t = 16, d = 128;
  const auto attention = [&](double heads, double dh) {
    return t * 2 * d * 2 * heads * dh + heads * t * (2 * d * dh + 4 * t * dh + 2 * dh * d);
  };
  const double blocks = 2 * (attention(2, 16) + attention(4, 16) + attention(8, 16));
  const DiT::Flops f = dit.forward_flops_per_sample();
  EXPECT_NEAR(f.dense, mha.dense - 6 * attention(4, 32) + blocks, 1e-9 * f.dense);
  EXPECT_DOUBLE_EQ(f.active, f.dense);  // MHA: every head on every token
  o.head_dim = 0;  // each block's width is dim / its heads again: 128 / 8 = 16, 128 / 2 = 64
  o.attention.heads = {2, 4, 3, 2, 4, 8};
  expect_error<Error>([&] { DiT m(o, gen); }, {"dim 128 is not a multiple of heads 3 (block 2)", "head_dim"});
  o.attention.heads = {2, 4};
  expect_error<Error>([&] { DiT m(o, gen); }, {"model.block_heads has 2 values", "(6)"});
}

TEST(Dit, RejectsOptionsAndInputsItCannotHonour) {
  Generator gen(0);
  DitOptions o = dit_preset("fmnist");
  o.dim = 130;
  expect_error<Error>([&] { DiT m(o, gen); }, {"dim 130", "heads 4"});
  o = dit_preset("fmnist");
  o.input_size = 9;
  expect_error<Error>([&] { DiT m(o, gen); }, {"input_size 9", "patch_size 2"});
  o = dit_preset("fmnist");
  o.class_dropout_prob = 1.0;
  expect_error<Error>([&] { DiT m(o, gen); }, {"class_dropout_prob"});
  o = dit_preset("fmnist");
  o.attention.shared_heads = {1, 1};
  o.attention.routed_topk = {1, 1};
  expect_error<Error>([&] { DiT m(o, gen); }, {"model.shared_heads has 2 values", "(6)"});
  expect_error<Error>([] { dit_preset("MoH-DiT-XL/2-50"); }, {"unknown model 'MoH-DiT-XL/2-50'", "MoH-DiT-XL/2-75"});
  DiT dit(dit_preset("fmnist"), gen);
  const ag::Variable x(zeros({2, 4, 8, 8}));
  const Tensor t = zeros({2}), y = from_vector<int64_t>({0, 1}, {2});
  expect_error<Error>([&] { dit.forward(ag::Variable(zeros({2, 3, 8, 8})), t, y); }, {"expected x [N, 4, 8, 8]"});
  expect_error<Error>([&] { dit.forward(x, zeros({3}), y); }, {"timesteps t [2]"});
  expect_error<Error>([&] { dit.forward(x, t, from_vector<int64_t>({0, 11}, {2})); }, {"label 11", "[0, 10]"});
  expect_error<Error>([&] { dit.forward(x, t, y); }, {"label dropout generator"});  // training, no generator
  dit.eval();
  expect_error<Error>([&] { dit.forward(x, t, y, from_vector<int64_t>({1}, {1})); }, {"force_drop_ids [2]"});
}

}  // namespace
}  // namespace moh
