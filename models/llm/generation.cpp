// generate(): prefill, then one cached forward per drawn token (see generation.h).
#include "models/llm/generation.h"

#include <algorithm>
#include <chrono>

#include "autograd/tape.h"
#include "core/factory.h"
#include "models/llm/llm_cache.h"

namespace moh {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The next-token logits [1, V] of the last position of logits [1, T, V].
Tensor last_position(const Tensor& logits) { return logits.select(1, logits.size(1) - 1); }

}  // namespace

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::MaxTokens: return "max tokens";
    case StopReason::StopToken: return "end of text";
    case StopReason::ContextFull: return "context full";
  }
  return "?";
}

GenerationResult generate(const LanguageModel& model, const std::vector<int64_t>& prompt,
                          const GenerationOptions& options, const std::function<void(int64_t)>& on_token) {
  const int64_t context = model.options().max_seq_len, length = int64_t(prompt.size());
  MOH_CHECK(length > 0, "generate: the prompt has no tokens");
  MOH_CHECK(length <= context, "generate: the prompt's ", length, " tokens exceed the model's max_seq_len ",
            context);
  MOH_CHECK(options.max_new_tokens >= 0, "generate: max_new_tokens must be >= 0, got ", options.max_new_tokens);
  ag::NoGradGuard no_grad;
  Sampler sampler(options.sampler, options.seed);
  GenerationResult result;
  if (options.max_new_tokens == 0) return result;
  // Token i (0-based) is drawn after feeding i tokens past the prompt, so the cache needs room for
  // length + max_new_tokens - 1 positions, and at most context - length + 1 tokens can be drawn.
  const int64_t budget = std::min(options.max_new_tokens, context - length + 1);
  LlmCache cache(model, 1, length + budget - 1);
  const Device device = model.tok_embed->weight().device();

  const auto prefill_start = std::chrono::steady_clock::now();
  Tensor logits = last_position(model.forward_cached(from_vector(prompt, {1, length}, DType::Int64, device), cache));
  int64_t token = sampler.sample(logits)[0];
  result.prefill_seconds = seconds_since(prefill_start);
  const auto start = std::chrono::steady_clock::now();
  while (!(options.stop_token && token == *options.stop_token)) {
    result.tokens.push_back(token);
    if (on_token) on_token(token);
    if (int64_t(result.tokens.size()) == budget) break;
    const Tensor next = from_vector(std::vector<int64_t>{token}, {1, 1}, DType::Int64, device);
    token = sampler.sample(last_position(model.forward_cached(next, cache)))[0];
    ++result.decode_steps;
  }
  if (int64_t(result.tokens.size()) < budget) result.stop = StopReason::StopToken;
  else if (budget < options.max_new_tokens) result.stop = StopReason::ContextFull;
  result.decode_seconds = seconds_since(start);
  return result;
}

}  // namespace moh
