// MultiHeadAttention and MoHAttention: dense and sparse executions agree on outputs and every
// gradient across head splits, causal/RoPE/GQA/qk-norm variants and degenerate routings; MoH
// reduces to MHA where the design says it must; float64 gradchecks of both executions; balance
// loss, its balance reducer (per model), routing statistics, the packed row layout and option errors.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/autograd.h"
#include "core/factory.h"
#include "core/ops.h"
#include "layers/moh_attention.h"
#include "tests/layers/layer_test_util.h"
#include "tests/test_util.h"

namespace moh {
namespace {

struct RunResult {
  std::vector<double> out, grad_x, balance;
  std::map<std::string, std::vector<double>> grads;
};

// One forward + backward of L = sum(out * w) (+ balance loss) with fresh gradients.
RunResult run(MultiHeadAttention& layer, const Tensor& x_value, const Tensor& positions = {}) {
  for (auto& p : layer.parameters()) p.zero_grad();
  ag::Variable x(x_value.clone(), true);
  AttentionOutput o = layer.forward(x, positions);
  Generator gen(77);
  ag::Variable weights(normal(o.out.shape(), 0, 1, gen, o.out.dtype()));
  ag::Variable loss = ag::sum(ag::mul(o.out, weights));
  RunResult r;
  if (o.balance_loss.defined()) {
    r.balance = o.balance_loss.data().to_vector<double>();
    loss = ag::add(loss, o.balance_loss);
  }
  ag::backward(loss);
  r.out = o.out.data().to_vector<double>();
  r.grad_x = x.grad().to_vector<double>();
  for (auto& [name, p] : layer.named_parameters())
    r.grads[name] = p.grad().defined() ? p.grad().to_vector<double>() : std::vector<double>(size_t(p.numel()), 0.0);
  return r;
}

void expect_close(const std::vector<double>& a, const std::vector<double>& b, double tol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double err = std::fabs(a[i] - b[i]) / (1.0 + std::fabs(b[i]));
    if (err > worst) { worst = err; at = i; }
  }
  EXPECT_LE(worst, tol) << what << " worst at " << at << ": " << a[at] << " vs " << b[at];
}

void expect_runs_equal(const RunResult& a, const RunResult& b, double tol) {
  expect_close(a.out, b.out, tol, "out");
  expect_close(a.grad_x, b.grad_x, tol, "grad x");
  expect_close(a.balance, b.balance, tol, "balance loss");
  for (auto& [name, g] : a.grads) expect_close(g, b.grads.at(name), tol, "grad " + name);
}

struct Config {
  const char* name;
  int64_t heads, shared, topk, kv_heads, tokens;
  bool causal, qk_norm, rope;
  MoHRouter router;
};

AttentionOptions attention_options(const Config& c, DType dtype) {
  AttentionOptions o;
  o.dim = 16;
  o.num_heads = c.heads;
  o.head_dim = 4;
  o.num_kv_heads = c.kv_heads;
  o.causal = c.causal;
  o.qk_norm = c.qk_norm;
  o.rope_theta = c.rope ? 100.0 : 0.0;
  o.max_positions = 64;
  o.dtype = dtype;
  return o;
}

class SparseMatchesDense : public ::testing::TestWithParam<Config> {};

TEST_P(SparseMatchesDense, OutputsAndAllGradients) {
  const Config c = GetParam();
  Generator gen(3);
  MoHAttention layer(attention_options(c, DType::Float32),
                     {c.shared, c.topk, MoHExecution::Dense, c.router, true, 1e-6}, gen);
  Tensor x = normal({2, c.tokens, 16}, 0, 1, gen);
  RunResult dense = run(layer, x);
  layer.set_execution(MoHExecution::Sparse);
  for (MoHProjections projections : {MoHProjections::Gathered, MoHProjections::Dense}) {
    layer.set_projections(projections);
    SCOPED_TRACE(projections == MoHProjections::Gathered ? "gathered projections" : "dense projections");
    expect_runs_equal(run(layer, x), dense, 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Configs, SparseMatchesDense,
    ::testing::Values(Config{"shared2_top2", 6, 2, 2, 0, 9, false, false, false, MoHRouter::Learned},
                      Config{"shared1", 5, 1, 2, 0, 7, false, false, false, MoHRouter::Learned},
                      Config{"no_shared", 4, 0, 1, 0, 8, false, false, false, MoHRouter::Learned},
                      Config{"causal_rope", 6, 2, 3, 0, 11, true, false, true, MoHRouter::Learned},
                      Config{"gqa_qknorm", 6, 2, 2, 3, 8, true, true, false, MoHRouter::Learned},
                      // GQA groups of 4: shared heads filling whole groups (K/V read in place), none,
                      // and shared heads that split a group (that layer reads repeated K/V).
                      Config{"gqa_shared_whole_groups", 8, 4, 2, 2, 9, true, false, true, MoHRouter::Learned},
                      Config{"gqa_no_shared", 8, 0, 3, 2, 7, true, false, false, MoHRouter::Learned},
                      Config{"gqa_shared_split_group", 8, 2, 3, 2, 9, true, false, true, MoHRouter::Learned},
                      Config{"multi_query", 6, 0, 3, 1, 6, false, false, false, MoHRouter::Learned},
                      Config{"single_token", 6, 1, 1, 0, 1, true, false, true, MoHRouter::Learned},
                      Config{"all_routed_selected", 4, 1, 3, 0, 5, false, false, false, MoHRouter::Learned},
                      Config{"query_norm", 6, 2, 2, 0, 9, true, false, true, MoHRouter::QueryNorm}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(MoHAttention, AllSharedWithoutGatesIsExactlyMultiHeadAttention) {
  Config c{"", 4, 4, 0, 0, 6, true, false, true, MoHRouter::Learned};
  Generator g1(5), g2(5);
  MultiHeadAttention mha(attention_options(c, DType::Float32), g1);
  MoHAttention moh(attention_options(c, DType::Float32), {4, 0, MoHExecution::Sparse, MoHRouter::Learned, false, 1e-6},
                   g2);
  EXPECT_EQ(moh.state_dict().size(), mha.state_dict().size());
  Generator gx(6);
  Tensor x = normal({2, 6, 16}, 0, 1, gx);
  expect_runs_equal(run(moh, x), run(mha, x), 0.0);
}

TEST(MoHAttention, ConversionKeepsWeightsAndSelectingEveryHeadReproducesMHA) {
  Config c{"", 6, 2, 0, 3, 7, true, true, true, MoHRouter::Learned};
  Generator gen(8);
  MultiHeadAttention mha(attention_options(c, DType::Float64), gen);
  Tensor x = normal({2, 7, 16}, 0, 1, gen, DType::Float64);
  auto all = convert_to_moh(mha, {2, 4, MoHExecution::Sparse});  // K = E: every routed head selected, gates 1
  EXPECT_EQ(all->moh_options().router, MoHRouter::QueryNorm);
  EXPECT_EQ(all->state_dict().size(), mha.state_dict().size());
    // Outputs agree exactly; gradients do not, since the converted layer's straight-through
  // estimator also sends a gradient to its routing scores.
  expect_close(run(*all, x).out, run(mha, x).out, 1e-12, "out");
  // With K < E the converted layer computes fewer heads, and still agrees across executions.
  auto half = convert_to_moh(mha, {2, 2, MoHExecution::Dense});
  RunResult dense = run(*half, x);
  half->set_execution(MoHExecution::Sparse);
  expect_runs_equal(run(*half, x), dense, 1e-9);
  EXPECT_DOUBLE_EQ(half->active_share(), 4.0 / 6.0);
}

TEST(MoHAttention, GradcheckBothExecutionsInFloat64) {
  for (MoHExecution ex : {MoHExecution::Dense, MoHExecution::Sparse}) {
    Config c{"", 4, 1, 2, 0, 5, true, false, true, MoHRouter::Learned};
    AttentionOptions o = attention_options(c, DType::Float64);
    o.dim = 8;
    o.head_dim = 2;
    Generator gen(9);
    MoHAttention layer(o, MoHOptions{1, 2, ex}, gen);
    auto result = layer_test::gradcheck_module(
        layer,
        [&layer](const ag::Variable& x) {
          AttentionOutput out = layer.forward(x);
          return ag::add(out.out, ag::mul(out.balance_loss, 3.0));  // balance loss broadcast into every output
        },
        ag::Variable(normal({1, 5, 8}, 0, 1, gen, DType::Float64), true));
    EXPECT_TRUE(result.ok) << (ex == MoHExecution::Dense ? "dense: " : "sparse: ") << result.message;
  }
}

TEST(MoHAttention, BalanceLossMatchesItsDefinition) {
  Config c{"", 6, 2, 2, 0, 10, false, false, false, MoHRouter::Learned};
  Generator gen(10);
  MoHAttention layer(attention_options(c, DType::Float64), {2, 2}, gen);
  Tensor x = normal({3, 10, 16}, 0, 1, gen, DType::Float64);
  AttentionOutput out = layer.forward(ag::Variable(x));
  ASSERT_TRUE(out.balance_loss.defined());
  // Recompute p and m from the router weight: L = E * sum_i mean(p_i) mean(m_i).
  const int64_t n = 30, e = 4;
  Tensor logits = matmul(x.reshape({n, 16}), layer.state_dict().at("router.weight").t());
  auto p = softmax(logits, 1).to_vector<double>();
  double loss = 0;
  for (int64_t i = 0; i < e; ++i) {
    double mp = 0, mm = 0;
    for (int64_t t = 0; t < n; ++t) {
      mp += p[size_t(t * e + i)] / n;
      int64_t above = 0;
      for (int64_t j = 0; j < e; ++j) above += p[size_t(t * e + j)] > p[size_t(t * e + i)];
      mm += (above < 2 ? 1.0 : 0.0) / n;
    }
    loss += mp * mm;
  }
  EXPECT_NEAR(out.balance_loss.data().item<double>(), e * loss, 1e-12);
  layer.eval();
  EXPECT_FALSE(layer.forward(ag::Variable(x)).balance_loss.defined());
}

// A model of two MoH layers and an MHA one: the reducer must reach every MoH layer of its tree.
class ThreeBlocks : public Module {
 public:
  ThreeBlocks(const AttentionOptions& o, Generator& gen) {
    first = register_module("first", std::make_shared<MoHAttention>(o, MoHOptions{2, 2}, gen));
    register_module("mha", std::make_shared<MultiHeadAttention>(o, gen));
    second = register_module("second", std::make_shared<MoHAttention>(o, MoHOptions{2, 2}, gen));
  }
  std::string type_name() const override { return "ThreeBlocks"; }
  std::shared_ptr<MoHAttention> first, second;
};

double balance_loss(MoHAttention& layer, const Tensor& x) {
  return layer.forward(ag::Variable(x)).balance_loss.data().item<double>();
}

TEST(MoHAttention, BalanceReducerActsOnlyOnTheModelItIsInstalledOn) {
  Config c{"", 6, 2, 2, 0, 10, false, false, false, MoHRouter::Learned};
  const AttentionOptions o = attention_options(c, DType::Float64);
  Generator gen_a(10), gen_b(10);
  ThreeBlocks a(o, gen_a), b(o, gen_b);  // the same weights
  Generator data(11);
  const Tensor x = normal({3, 10, 16}, 0, 1, data, DType::Float64);
  const double local = balance_loss(*a.first, x);
  int calls = 0;
  // Pooled loads of a perfectly balanced router, K / E = 1/2 each: L = E * sum_i mean(p_i) / 2 = 2.
  EXPECT_EQ(set_balance_reducer(a, [&calls](Tensor& load) {
              ++calls;
              fill_(load, 0.5);
            }),
            2);
  EXPECT_NEAR(balance_loss(*a.first, x), 2.0, 1e-12);
  EXPECT_NEAR(balance_loss(*a.second, x), 2.0, 1e-12);
  EXPECT_EQ(calls, 2);
  EXPECT_GT(std::abs(local - 2.0), 1e-3);  // else the test could not tell pooled from local
  // The other model's layers keep the statistics of their own tokens.
  EXPECT_EQ(balance_loss(*b.first, x), local);
  const double b_second = balance_loss(*b.second, x);
  EXPECT_GT(std::abs(b_second - 2.0), 1e-3);
  EXPECT_EQ(calls, 2);
  // Uninstalled: local statistics again.
  EXPECT_EQ(set_balance_reducer(a, nullptr), 2);
  EXPECT_EQ(balance_loss(*a.first, x), local);
  EXPECT_EQ(balance_loss(*a.second, x), b_second);
  EXPECT_EQ(calls, 2);
}

TEST(MoHAttention, RoutingStatisticsCountSelections) {
  Config c{"", 6, 2, 3, 0, 10, false, false, false, MoHRouter::Learned};
  Generator gen(12);
  MoHAttention layer(attention_options(c, DType::Float32), {2, 3}, gen);
  layer.forward(ag::Variable(normal({2, 10, 16}, 0, 1, gen)));
  const RoutingStats& s = layer.last_stats();
  EXPECT_EQ(s.tokens, 20);
  EXPECT_EQ(s.selection_rate[0], 1.0);
  EXPECT_EQ(s.selection_rate[1], 1.0);
  double routed = 0;
  for (int i = 2; i < 6; ++i) routed += s.selection_rate[size_t(i)];
  EXPECT_NEAR(routed, 3.0, 1e-12);  // each token keeps K = 3 routed heads
  EXPECT_GT(s.router_entropy, 0.0);
  EXPECT_LE(s.router_entropy, std::log(4.0) + 1e-9);
  double gate_sum = 0;
  for (double g : s.mean_gate) gate_sum += g;
  EXPECT_GT(gate_sum, 0.0);
  // Computed on demand from the last forward's routing: a new forward replaces them.
  layer.forward(ag::Variable(normal({1, 7, 16}, 0, 1, gen)));
  EXPECT_EQ(layer.last_stats().tokens, 7);
}

TEST(MoHAttention, AutoProjectionsChooseByShare) {
  // Gathered at most half of the routed heads; up to three quarters with heads of 64 dimensions or more.
  Generator gen(0);
  auto gathered = [&](int64_t heads, int64_t head_dim, int64_t shared, int64_t topk) {
    AttentionOptions a;
    a.dim = heads * head_dim;
    a.num_heads = heads;
    return MoHAttention(a, {shared, topk}, gen).gathered_projections();
  };
  EXPECT_TRUE(gathered(8, 16, 2, 3));    // 3 of 6
  EXPECT_FALSE(gathered(8, 16, 2, 4));   // 4 of 6 with narrow heads
  EXPECT_TRUE(gathered(4, 64, 0, 3));    // 3 of 4 with 64-wide heads
  EXPECT_FALSE(gathered(5, 64, 0, 4));   // 4 of 5
  EXPECT_FALSE(gathered(4, 32, 0, 3));   // 3 of 4 with 32-wide heads
}

TEST(MoHAttention, RejectsInvalidOptionsAndInputs) {
  Config c{"", 4, 1, 1, 0, 4, false, false, false, MoHRouter::Learned};
  Generator gen(1);
  AttentionOptions o = attention_options(c, DType::Float32);
  EXPECT_THROW(MoHAttention(o, {5, 0}, gen), Error);
  EXPECT_THROW(MoHAttention(o, {1, 4}, gen), Error);
  EXPECT_THROW(MoHAttention(o, {1, 2, MoHExecution::Sparse, MoHRouter::Learned, false}, gen), Error);
  AttentionOptions bad = o;
  bad.num_kv_heads = 3;
  EXPECT_THROW(MultiHeadAttention(bad, gen), Error);
  MoHAttention layer(o, {1, 2}, gen);
  EXPECT_THROW(layer.forward(ag::Variable(zeros({2, 4, 15}))), Error);
  EXPECT_THROW(layer.forward(ag::Variable(zeros({2, 4, 16}, DType::Float64))), Error);
  EXPECT_NE(layer.summary().find("MoHAttention(dim=16, heads=4, head_dim=4, shared=1, topk=2, sparse)"),
            std::string::npos)
      << layer.summary();
}

}  // namespace
}  // namespace moh
