// KV-cached decoding of MultiHeadAttention and MoHAttention: a prefill then single-token (and
// multi-token) steps through forward_cached give the rows a whole-sequence forward gives, for MHA,
// GQA, RoPE, qk-norm and MoH (learned router dense and sparse with either projection, query-norm
// router); the cache holds the KV heads only; decoding records no tape; errors for a full cache,
// a non-causal layer and a cache that does not fit.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <ostream>

#include "autograd/autograd.h"
#include "core/factory.h"
#include "core/ops.h"
#include "layers/moh_attention.h"
#include "tests/test_util.h"

namespace moh {
namespace {

struct CacheCase {
  const char* name;
  int64_t heads, kv_heads;
  bool rope, qk_norm;
  std::optional<MoHOptions> moh;  // nullopt: MultiHeadAttention
};
void PrintTo(const CacheCase& c, std::ostream* os) { *os << c.name; }

std::shared_ptr<MultiHeadAttention> make_layer(const CacheCase& c, Generator& gen) {
  AttentionOptions o;
  o.dim = 24;
  o.num_heads = c.heads;
  o.head_dim = 4;
  o.num_kv_heads = c.kv_heads;
  o.causal = true;
  o.qk_norm = c.qk_norm;
  o.rope_theta = c.rope ? 100.0 : 0.0;
  o.max_positions = 32;
  std::shared_ptr<MultiHeadAttention> layer;
  if (c.moh) layer = std::make_shared<MoHAttention>(o, *c.moh, gen);
  else layer = std::make_shared<MultiHeadAttention>(o, gen);
  layer->eval();
  return layer;
}

void expect_close(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<double> a = got.to_vector<double>(), b = want.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  EXPECT_LE(worst, tol) << what;
}

class CachedDecoding : public ::testing::TestWithParam<CacheCase> {};

TEST_P(CachedDecoding, PrefillThenStepsMatchTheWholeSequence) {
  const CacheCase c = GetParam();
  Generator gen(21);
  std::shared_ptr<MultiHeadAttention> layer = make_layer(c, gen);
  const int64_t batch = 2, tokens = 11, prefill = 4;
  Tensor x = normal({batch, tokens, 24}, 0, 1, gen);
  Tensor full;
  {
    ag::NoGradGuard no_grad;
    full = layer->forward(ag::Variable(x)).out.data();
  }
  KvCache cache = layer->make_cache(batch, tokens);
  EXPECT_EQ(cache.shape().kv_heads, c.kv_heads == 0 ? c.heads : c.kv_heads);  // KV heads, not repeated
  auto step = [&](int64_t start, int64_t count) {
    const Tensor out = layer->forward_cached(ag::Variable(x.narrow(1, start, count)), cache).out.data();
    EXPECT_EQ(cache.length(), start + count);
    expect_close(out, full.narrow(1, start, count), 1e-5, str_cat(c.name, ": positions ", start, "+", count));
  };
  step(0, prefill);
  for (int64_t t = prefill; t < tokens - 3; ++t) step(t, 1);
  step(tokens - 3, 2);  // a multi-token step after single ones
  step(tokens - 1, 1);  // fills the cache exactly
}

MoHOptions moh(int64_t shared, int64_t topk, MoHExecution execution, MoHProjections projections,
               MoHRouter router = MoHRouter::Learned) {
  MoHOptions o;
  o.shared_heads = shared;
  o.routed_topk = topk;
  o.execution = execution;
  o.router = router;
  o.projections = projections;
  return o;
}

INSTANTIATE_TEST_SUITE_P(
    Layers, CachedDecoding,
    ::testing::Values(
        CacheCase{"mha", 6, 0, false, false, std::nullopt}, CacheCase{"mha_rope", 6, 0, true, false, std::nullopt},
        CacheCase{"gqa_rope_qknorm", 6, 2, true, true, std::nullopt},
        CacheCase{"moh_dense", 6, 0, true, false, moh(2, 2, MoHExecution::Dense, MoHProjections::Auto)},
        CacheCase{"moh_sparse_gathered", 6, 0, true, false,
                  moh(2, 2, MoHExecution::Sparse, MoHProjections::Gathered)},
        CacheCase{"moh_sparse_dense_proj", 6, 3, true, true,
                  moh(1, 2, MoHExecution::Sparse, MoHProjections::Dense)},
        CacheCase{"moh_sparse_no_shared_gqa", 6, 2, true, false,
                  moh(0, 2, MoHExecution::Sparse, MoHProjections::Gathered)},
        CacheCase{"moh_all_shared", 6, 0, true, false, moh(6, 0, MoHExecution::Sparse, MoHProjections::Auto)},
        CacheCase{"moh_query_norm", 6, 0, true, false,
                  moh(2, 2, MoHExecution::Sparse, MoHProjections::Auto, MoHRouter::QueryNorm)}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(KvCache, DecodingRecordsNoTapeAndNoBalanceLoss) {
  Generator gen(3);
  std::shared_ptr<MultiHeadAttention> layer =
      make_layer({"", 6, 0, true, false, moh(2, 2, MoHExecution::Sparse, MoHProjections::Auto)}, gen);
  layer->train();  // in training a whole-sequence forward returns a balance loss; decoding never does
  KvCache cache = layer->make_cache(1, 4);
  AttentionOutput o = layer->forward_cached(ag::Variable(normal({1, 3, 24}, 0, 1, gen), true), cache);
  EXPECT_FALSE(o.out.requires_grad());
  EXPECT_FALSE(o.balance_loss.defined());
  EXPECT_TRUE(layer->forward(ag::Variable(normal({1, 3, 24}, 0, 1, gen))).balance_loss.defined());
}

TEST(KvCache, AFullCacheIsAnErrorAndKeepsItsContents) {
  Generator gen(4);
  std::shared_ptr<MultiHeadAttention> layer = make_layer({"", 4, 2, true, false, std::nullopt}, gen);
  KvCache cache = layer->make_cache(1, 5);
  layer->forward_cached(ag::Variable(normal({1, 4, 24}, 0, 1, gen)), cache);
  const std::vector<double> before = cache.keys().to_vector<double>();
  test::expect_error([&] { layer->forward_cached(ag::Variable(normal({1, 2, 24}, 0, 1, gen)), cache); },
                     {"KvCache: full", "4 cached positions + 2 new", "max_length 5"});
  EXPECT_EQ(cache.length(), 4);
  EXPECT_EQ(cache.keys().to_vector<double>(), before);
}

TEST(KvCache, RefusesNonCausalLayersAndCachesThatDoNotFit) {
  Generator gen(5);
  AttentionOptions o;
  o.dim = 24;
  o.num_heads = 6;
  MultiHeadAttention bidirectional(o, gen);
  KvCache cache = bidirectional.make_cache(1, 8);
  test::expect_error([&] { bidirectional.forward_cached(ag::Variable(normal({1, 2, 24}, 0, 1, gen)), cache); },
                     {"forward_cached needs a causal layer"});
  std::shared_ptr<MultiHeadAttention> layer = make_layer({"", 6, 3, false, false, std::nullopt}, gen);
  KvCache two = layer->make_cache(2, 8);
  test::expect_error([&] { layer->forward_cached(ag::Variable(normal({1, 2, 24}, 0, 1, gen)), two); },
                     {"does not fit", "expected batch 1, 3 KV heads of 4"});
  test::expect_error([] { KvCache({1, 2, 0, 4}, DType::Float32, Device::cpu()); }, {"KvCache", "positive"});
}

TEST(KvCache, ClearStartsANewSequence) {
  Generator gen(6);
  std::shared_ptr<MultiHeadAttention> layer = make_layer({"", 6, 0, true, false, std::nullopt}, gen);
  Tensor x = normal({1, 3, 24}, 0, 1, gen);
  KvCache cache = layer->make_cache(1, 3);
  const std::vector<double> first = layer->forward_cached(ag::Variable(x), cache).out.data().to_vector<double>();
  cache.clear();
  EXPECT_EQ(cache.length(), 0);
  EXPECT_EQ(layer->forward_cached(ag::Variable(x), cache).out.data().to_vector<double>(), first);
}

}  // namespace
}  // namespace moh
