// Autoregressive generation with a KV cache: the prompt is prefilled in one cached forward, then
// each drawn token is fed back alone (LanguageModel::forward_cached), so a step costs one token's
// forward plus attention over the cache instead of a forward over the whole context. Tokens are
// drawn by a Sampler (sampler.h) seeded by the options: the same model, prompt and options give the
// same tokens on every run. Generation stops after max_new_tokens, at the stop token (drawn but not
// returned), or when the context reaches the model's max_seq_len. Runs without a tape; the caller
// puts the model in evaluation mode (EvalModeGuard).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "models/llm/language_model.h"
#include "models/llm/sampler.h"

namespace moh {

struct GenerationOptions {
  int64_t max_new_tokens = 256;
  SamplerOptions sampler;
  uint64_t seed = 1;
  std::optional<int64_t> stop_token;  // e.g. the tokenizer's end-of-text id
};

enum class StopReason { MaxTokens, StopToken, ContextFull };
const char* stop_reason_name(StopReason reason);

struct GenerationResult {
  std::vector<int64_t> tokens;  // the new tokens, without the stop token
  StopReason stop = StopReason::MaxTokens;
  double prefill_seconds = 0;   // the prompt's forward and the first draw
  double decode_seconds = 0;    // every later step
  int64_t decode_steps = 0;     // single-token forwards (and draws) after the first draw
};

// prompt: one sequence of at least one and at most max_seq_len token ids. on_token (optional) gets
// each new token as soon as it is drawn (the stop token excluded), for streaming.
GenerationResult generate(const LanguageModel& model, const std::vector<int64_t>& prompt,
                          const GenerationOptions& options, const std::function<void(int64_t)>& on_token = {});

}  // namespace moh
