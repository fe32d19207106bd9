// KV-cached decoding of the LanguageModel: a prefill then single-token steps give the logits of a
// full recompute (LLaMA with GQA, MoH blocks, dense and sparse; GPT-2, whose learned positions are
// offset by the cache length); generate(): greedy generation equals the argmax of a full recompute
// at every step, the stop token and a full context end it, a seed fixes the tokens; errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "autograd/autograd.h"
#include "core/factory.h"
#include "core/ops.h"
#include "models/llm/generation.h"
#include "models/llm/language_model.h"
#include "tests/test_util.h"

namespace moh {
namespace {

LlmOptions llama_gqa_moh(MoHExecution execution) {
  LlmOptions o;
  o.vocab_size = 29, o.dim = 24, o.depth = 3, o.heads = 6, o.kv_heads = 2, o.mlp_hidden = 32, o.max_seq_len = 16;
  o.tie_embeddings = true;
  o.attention.shared_heads = {2, 0, 6};  // MoH with shared heads, MoH without, an all-shared gated block
  o.attention.routed_topk = {2, 3, 0};
  o.attention.execution = execution;
  return o;
}

LlmOptions gpt2() {
  LlmOptions o;
  o.arch = LlmOptions::Arch::Gpt2;
  o.vocab_size = 29, o.dim = 24, o.depth = 2, o.heads = 4, o.max_seq_len = 16;
  return o;
}

Tensor random_tokens(int64_t batch, int64_t tokens, int64_t vocab, uint64_t seed) {
  Generator gen(seed);
  std::vector<int64_t> ids;
  for (double u : uniform({batch * tokens}, 0.0, double(vocab), gen, DType::Float64).to_vector<double>())
    ids.push_back(std::min(int64_t(u), vocab - 1));
  return from_vector(ids, {batch, tokens}, DType::Int64);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  return worst;
}

Tensor full_logits(const LanguageModel& model, const Tensor& tokens) {
  ag::NoGradGuard no_grad;
  return model.forward(tokens).logits.data();
}

void expect_cached_equals_full(const LlmOptions& options, const char* what) {
  Generator gen(3);
  LanguageModel model(options, gen);
  model.eval();
  const int64_t batch = 2, tokens = options.max_seq_len, prefill = 5;
  const Tensor ids = random_tokens(batch, tokens, options.vocab_size, 4);
  const Tensor full = full_logits(model, ids);
  LlmCache cache(model, batch, tokens);
  EXPECT_LE(max_abs_diff(model.forward_cached(ids.narrow(1, 0, prefill).contiguous(), cache),
                         full.narrow(1, 0, prefill)),
            1e-5)
      << what << ": prefill";
  for (int64_t t = prefill; t < tokens; ++t) {
    const Tensor step = model.forward_cached(ids.narrow(1, t, 1).contiguous(), cache);
    EXPECT_EQ(step.shape(), (Shape{batch, 1, options.vocab_size}));
    EXPECT_LE(max_abs_diff(step, full.narrow(1, t, 1)), 1e-5) << what << ": position " << t;
  }
  EXPECT_EQ(cache.length(), tokens);
}

TEST(LlmDecoding, CachedLogitsEqualAFullRecompute) {
  expect_cached_equals_full(llama_gqa_moh(MoHExecution::Sparse), "LLaMA GQA + MoH sparse");
  expect_cached_equals_full(llama_gqa_moh(MoHExecution::Dense), "LLaMA GQA + MoH dense");
  expect_cached_equals_full(gpt2(), "GPT-2");
  LlmOptions gpt2_moh = gpt2();
  gpt2_moh.attention.shared_heads = {1};
  gpt2_moh.attention.routed_topk = {2};
  expect_cached_equals_full(gpt2_moh, "GPT-2 MoH");
}

TEST(LlmDecoding, CacheErrorsNameTheLimit) {
  Generator gen(3);
  LanguageModel model(gpt2(), gen);
  test::expect_error([&] { LlmCache(model, 1, 17); }, {"LlmCache: max_length 17", "max_seq_len = 16"});
  LlmCache cache(model, 1, 4);
  model.forward_cached(random_tokens(1, 3, 29, 1), cache);
  test::expect_error([&] { model.forward_cached(random_tokens(1, 2, 29, 1), cache); },
                     {"KvCache: full", "3 cached positions + 2 new", "max_length 4"});
  LlmCache two(model, 2, 4);
  test::expect_error([&] { model.forward_cached(random_tokens(1, 2, 29, 1), two); }, {"does not fit", "batch 1"});
}

TEST(LlmGeneration, GreedyIsTheArgmaxOfAFullRecomputeAtEveryStep) {
  Generator gen(5);
  LanguageModel model(llama_gqa_moh(MoHExecution::Sparse), gen);
  model.eval();
  const std::vector<int64_t> prompt{3, 1, 4, 1, 5};
  GenerationOptions options;
  options.max_new_tokens = 8;
  options.sampler.temperature = 0;
  std::vector<int64_t> streamed;
  const GenerationResult result = generate(model, prompt, options, [&](int64_t t) { streamed.push_back(t); });
  ASSERT_EQ(result.tokens.size(), 8u);
  EXPECT_EQ(streamed, result.tokens);
  EXPECT_EQ(result.stop, StopReason::MaxTokens);
  EXPECT_EQ(result.decode_steps, 7);
  std::vector<int64_t> context = prompt;
  for (int64_t token : result.tokens) {
    const int64_t t = int64_t(context.size());
    const Tensor last = full_logits(model, from_vector(context, {1, t}, DType::Int64)).select(1, t - 1);
    EXPECT_EQ(argmax(last, 1).to_vector<int64_t>()[0], token) << "after " << t << " tokens";
    context.push_back(token);
  }
}

TEST(LlmGeneration, StopsAtTheStopTokenAndAtAFullContext) {
  Generator gen(6);
  LanguageModel model(gpt2(), gen);
  model.eval();
  GenerationOptions greedy;
  greedy.sampler.temperature = 0;
  greedy.max_new_tokens = 6;
  const std::vector<int64_t> prompt{7, 8};
  const std::vector<int64_t> free_run = generate(model, prompt, greedy).tokens;
  ASSERT_EQ(free_run.size(), 6u);
  GenerationOptions stopping = greedy;
  stopping.stop_token = free_run[3];
  const GenerationResult stopped = generate(model, prompt, stopping);
  const size_t first = size_t(std::find(free_run.begin(), free_run.end(), free_run[3]) - free_run.begin());
  EXPECT_EQ(stopped.tokens, std::vector<int64_t>(free_run.begin(), free_run.begin() + long(first)));
  EXPECT_EQ(stopped.stop, StopReason::StopToken);
  // 13 prompt tokens in a 16-token context: positions 13, 14, 15 take tokens, so 4 are drawn.
  GenerationOptions many = greedy;
  many.max_new_tokens = 100;
  const GenerationResult full = generate(model, std::vector<int64_t>(13, 2), many);
  EXPECT_EQ(full.tokens.size(), 4u);
  EXPECT_EQ(full.stop, StopReason::ContextFull);
  test::expect_error([&] { generate(model, std::vector<int64_t>(17, 2), many); },
                     {"prompt's 17 tokens exceed the model's max_seq_len 16"});
  test::expect_error([&] { generate(model, {}, many); }, {"prompt has no tokens"});
}

TEST(LlmGeneration, ASeedFixesTheSampledTokens) {
  Generator gen(7);
  LanguageModel model(gpt2(), gen);
  model.eval();
  GenerationOptions options;
  options.max_new_tokens = 12;
  options.sampler = {1.0, 0, 1.0};
  const std::vector<int64_t> prompt{1, 2, 3};
  const std::vector<int64_t> a = generate(model, prompt, options).tokens;
  EXPECT_EQ(generate(model, prompt, options).tokens, a);
  options.seed = 2;
  EXPECT_NE(generate(model, prompt, options).tokens, a);
}

}  // namespace
}  // namespace moh
