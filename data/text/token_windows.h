// Training and validation windows over token shards. A TokenCorpus is the shards of one split in
// order (memory-mapped). A window is seq_len + 1 consecutive tokens of one shard (inputs and the
// next-token targets), never crossing a shard boundary.
// RandomTokenWindows draws windows uniformly at random with replacement: global window g starts at
// a position given only by (seed, g) through Philox, so {index} is the whole state. Distributed runs
// shard each draw like EpochSampler: with world size W, next(count) on rank r takes block r of the
// next count * W global windows and the position counts global windows, so a run resumes on any
// world size at the same global position.
// SequentialTokenWindows reads validation in order: the windows start at 0, seq_len, 2 seq_len, ...
// in each shard (neighbours share one token, as llm.c's loader), rank r taking windows r, r + W, ...
// Both keep a reference to their TokenCorpus, which must outlive them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "data/epoch_sampler.h"
#include "data/text/token_shard.h"

namespace moh::text {

class TokenCorpus {
 public:
  explicit TokenCorpus(const std::vector<std::string>& paths);
  // The shards of `split` in `dir`: files named <split>_*.bin or *_<split>_*.bin (llm.c's names), in
  // name order. An error when there are none.
  static TokenCorpus from_dir(const std::string& dir, const std::string& split);

  const std::vector<TokenShard>& shards() const { return shards_; }
  int64_t tokens() const { return tokens_; }

 private:
  std::vector<TokenShard> shards_;
  int64_t tokens_ = 0;
};

class RandomTokenWindows {
 public:
  // `what` names the split in errors ("llm train").
  RandomTokenWindows(const TokenCorpus& corpus, int64_t seq_len, uint64_t seed, std::string what,
                     SamplerShard shard = process_shard());

  // Appends this rank's `count` windows (count * (seq_len + 1) tokens, window after window) to `out`.
  void next(int64_t count, std::vector<TokenId>& out);
  // Where global window g starts: (shard, offset).
  std::pair<size_t, int64_t> window_start(int64_t g) const;

  int64_t index() const { return index_; }
  // {"index", "window_seed"}; load_state checks the key, the range and the seed.
  std::map<std::string, int64_t> state() const;
  void load_state(const std::map<std::string, int64_t>& state);

 private:
  const TokenCorpus& corpus_;
  int64_t seq_len_;
  uint64_t seed_;
  std::string what_;
  SamplerShard shard_;
  std::vector<int64_t> starts_end_;  // cumulative count of window starts, per shard
  int64_t index_ = 0;
};

class SequentialTokenWindows {
 public:
  SequentialTokenWindows(const TokenCorpus& corpus, int64_t seq_len, std::string what,
                         SamplerShard shard = process_shard());

  // Appends this rank's next window to `out`; false (nothing appended) after its last one.
  bool next(std::vector<TokenId>& out);
  void reset() { next_ = shard_.rank; }
  // Windows in the whole corpus (all ranks together).
  int64_t window_count() const { return window_end_.empty() ? 0 : window_end_.back(); }

 private:
  const TokenCorpus& corpus_;
  int64_t seq_len_;
  SamplerShard shard_;
  std::vector<int64_t> window_end_;  // cumulative windows per shard
  int64_t next_;
};

}  // namespace moh::text
