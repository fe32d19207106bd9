// Random and sequential windows over token shards (see token_windows.h).
#include "data/text/token_windows.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/math/philox.h"

namespace moh::text {
namespace {

// A uniform integer in [0, n) for global window g: 64 Philox bits reduced by multiply-shift (the
// bias is below n / 2^64).
int64_t uniform_below(uint64_t seed, int64_t g, int64_t n) {
  const Philox4 r = philox4x32(seed, uint64_t(g), 0);
  const uint64_t bits = (uint64_t(r.v[0]) << 32) | r.v[1];
  return int64_t((unsigned __int128)bits * uint64_t(n) >> 64);
}

bool is_shard_of(const std::string& name, const std::string& split) {
  if (name.size() < 4 || name.compare(name.size() - 4, 4, ".bin") != 0) return false;
  return name.rfind(split + "_", 0) == 0 || name.find("_" + split + "_") != std::string::npos;
}

}  // namespace

TokenCorpus::TokenCorpus(const std::vector<std::string>& paths) {
  MOH_CHECK(!paths.empty(), "a token corpus needs at least one shard");
  shards_.reserve(paths.size());
  for (const std::string& p : paths) {
    shards_.emplace_back(p);
    tokens_ += shards_.back().size();
  }
}

TokenCorpus TokenCorpus::from_dir(const std::string& dir, const std::string& split) {
  namespace fs = std::filesystem;
  MOH_CHECK(fs::is_directory(dir), "token shard folder '", dir, "' does not exist");
  std::vector<std::string> paths;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && is_shard_of(entry.path().filename().string(), split))
      paths.push_back(entry.path().string());
  MOH_CHECK(!paths.empty(), "no ", split, " shards in '", dir, "' (expected files named ", split, "_*.bin or *_", split,
            "_*.bin, as `moh tokenize` writes)");
  std::sort(paths.begin(), paths.end());
  return TokenCorpus(paths);
}

RandomTokenWindows::RandomTokenWindows(const TokenCorpus& corpus, int64_t seq_len, uint64_t seed, std::string what,
                                       SamplerShard shard)
    : corpus_(corpus), seq_len_(seq_len), seed_(seed), what_(std::move(what)), shard_(shard) {
  MOH_CHECK(seq_len_ >= 1, what_, ": seq_len must be at least 1, got ", seq_len_);
  MOH_CHECK(shard_.world >= 1 && shard_.rank >= 0 && shard_.rank < shard_.world, what_, ": shard rank ", shard_.rank,
            " is outside a world of size ", shard_.world);
  int64_t starts = 0;
  for (const TokenShard& s : corpus_.shards()) {
    starts += std::max<int64_t>(0, s.size() - seq_len_);
    starts_end_.push_back(starts);
  }
  MOH_CHECK(starts > 0, what_, ": no shard holds a window of seq_len + 1 = ", seq_len_ + 1, " tokens (the largest has ",
            std::max_element(corpus_.shards().begin(), corpus_.shards().end(),
                             [](const TokenShard& a, const TokenShard& b) { return a.size() < b.size(); })->size(),
            ")");
}

std::pair<size_t, int64_t> RandomTokenWindows::window_start(int64_t g) const {
  const int64_t start = uniform_below(seed_, g, starts_end_.back());
  const size_t shard = size_t(std::upper_bound(starts_end_.begin(), starts_end_.end(), start) - starts_end_.begin());
  return {shard, start - (shard == 0 ? 0 : starts_end_[shard - 1])};
}

void RandomTokenWindows::next(int64_t count, std::vector<TokenId>& out) {
  MOH_CHECK(count >= 0, what_, ": cannot draw ", count, " windows");
  const int64_t first = index_ + shard_.rank * count;
  for (int64_t g = first; g < first + count; ++g) {
    const auto [shard, offset] = window_start(g);
    corpus_.shards()[shard].copy(offset, seq_len_ + 1, out);
  }
  index_ += count * shard_.world;
}

std::map<std::string, int64_t> RandomTokenWindows::state() const {
  return {{"index", index_}, {"window_seed", int64_t(seed_)}};
}

void RandomTokenWindows::load_state(const std::map<std::string, int64_t>& state) {
  MOH_CHECK(state.count("index"), what_, ": the checkpoint's data state has no 'index'");
  MOH_CHECK(state.at("index") >= 0, what_, ": data position ", state.at("index"), " is negative");
  if (state.count("window_seed"))
    MOH_CHECK(uint64_t(state.at("window_seed")) == seed_, what_, ": the checkpoint drew windows with seed ",
              state.at("window_seed"), " but this run uses ", int64_t(seed_), " (keep run.seed when resuming)");
  index_ = state.at("index");
}

SequentialTokenWindows::SequentialTokenWindows(const TokenCorpus& corpus, int64_t seq_len, std::string what,
                                               SamplerShard shard)
    : corpus_(corpus), seq_len_(seq_len), shard_(shard), next_(shard.rank) {
  MOH_CHECK(seq_len_ >= 1, what, ": seq_len must be at least 1, got ", seq_len_);
  MOH_CHECK(shard_.world >= 1 && shard_.rank >= 0 && shard_.rank < shard_.world, what, ": shard rank ", shard_.rank,
            " is outside a world of size ", shard_.world);
  int64_t windows = 0;
  for (const TokenShard& s : corpus_.shards()) {
    windows += s.size() > seq_len_ ? (s.size() - 1) / seq_len_ : 0;
    window_end_.push_back(windows);
  }
}

bool SequentialTokenWindows::next(std::vector<TokenId>& out) {
  if (next_ >= window_count()) return false;
  const size_t shard = size_t(std::upper_bound(window_end_.begin(), window_end_.end(), next_) - window_end_.begin());
  const int64_t local = next_ - (shard == 0 ? 0 : window_end_[shard - 1]);
  corpus_.shards()[shard].copy(local * seq_len_, seq_len_ + 1, out);
  next_ += shard_.world;
  return true;
}

}  // namespace moh::text
