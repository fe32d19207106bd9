// LlmCache: one KvCache per block of a LanguageModel (see llm_cache.h).
#include "models/llm/llm_cache.h"

#include "models/llm/language_model.h"

namespace moh {

LlmCache::LlmCache(const LanguageModel& model, int64_t batch, int64_t max_length) {
  const int64_t limit = model.options().max_seq_len;
  MOH_CHECK(max_length > 0 && max_length <= limit, "LlmCache: max_length ", max_length,
            " must be in [1, max_seq_len = ", limit, "]");
  layers_.reserve(model.blocks.size());
  for (const auto& block : model.blocks) layers_.push_back(block->attn->make_cache(batch, max_length));
}

void LlmCache::clear() {
  for (KvCache& layer : layers_) layer.clear();
}

}  // namespace moh
