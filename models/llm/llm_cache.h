// LlmCache: a LanguageModel's decoding state, one KvCache (layers/kv_cache.h) per block, all for
// the same batch and max length. LanguageModel::forward_cached appends to every block's cache at
// once, so every block always holds the same number of positions: length().
#pragma once

#include <cstdint>
#include <vector>

#include "layers/kv_cache.h"

namespace moh {

class LanguageModel;

class LlmCache {
 public:
  // Empty caches for `batch` sequences of up to max_length positions (<= the model's max_seq_len).
  LlmCache(const LanguageModel& model, int64_t batch, int64_t max_length);

  int64_t length() const { return layers_.front().length(); }
  int64_t max_length() const { return layers_.front().shape().max_length; }
  int64_t batch() const { return layers_.front().shape().batch; }
  size_t depth() const { return layers_.size(); }
  KvCache& layer(size_t block) { return layers_.at(block); }
  // Forgets every position (a new sequence).
  void clear();

 private:
  std::vector<KvCache> layers_;
};

}  // namespace moh
