// Byte-level BPE merging (see byte_pair_encoder.h). The linear merge is tiktoken's
// _byte_pair_merge; the heap merge pops (rank, start) pairs, which picks the same pair each step.
#include "data/text/byte_pair_encoder.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <queue>

#include "core/error.h"

namespace moh::text {
namespace {

constexpr TokenId kNoRank = std::numeric_limits<TokenId>::max();

// A fast 64-bit hash of a short byte string (8-byte words, multiply-xor mixing).
inline uint64_t hash_bytes(std::string_view s) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ULL;
  uint64_t h = uint64_t(s.size()) * kMul;
  const char* p = s.data();
  size_t n = s.size();
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p, n);
  h = (h ^ tail) * kMul;
  h ^= h >> 32;
  return h;
}

}  // namespace

BytePairEncoder::BytePairEncoder(std::vector<std::pair<std::string, TokenId>> ranks, const std::string& what) {
  TokenId max_rank = -1;
  for (const auto& [bytes, rank] : ranks) {
    MOH_CHECK(rank >= 0 && rank < kNoRank, what, ": rank ", rank, " is out of range");
    MOH_CHECK(!bytes.empty(), what, ": rank ", rank, " is an empty token");
    max_rank = std::max(max_rank, rank);
  }
  by_rank_.resize(size_t(max_rank + 1));
  present_.resize(size_t(max_rank + 1));
  uint64_t capacity = 16;
  while (capacity < 2 * ranks.size()) capacity *= 2;
  slots_.assign(capacity, 0);
  mask_ = capacity - 1;
  for (auto& [bytes, rank] : ranks) {
    MOH_CHECK(!present_[size_t(rank)], what, ": rank ", rank, " appears twice");
    const uint64_t slot = slot_of(bytes);
    MOH_CHECK(slots_[slot] == 0, what, ": token of rank ", rank, " repeats the token of rank ", slots_[slot] - 1);
    slots_[slot] = rank + 1;
    present_[size_t(rank)] = true;
    by_rank_[size_t(rank)] = std::move(bytes);
  }
  count_ = ranks.size();
  for (int b = 0; b < 256; ++b)
    MOH_CHECK(rank_of(std::string_view(reinterpret_cast<const char*>(&b), 1)) >= 0, what,
              ": byte 0x", "0123456789abcdef"[b >> 4], "0123456789abcdef"[b & 15],
              " is not a token (a byte-level BPE needs all 256 single bytes)");
}

uint64_t BytePairEncoder::slot_of(std::string_view bytes) const {
  uint64_t slot = hash_bytes(bytes) & mask_;
  while (slots_[slot] != 0 && by_rank_[size_t(slots_[slot] - 1)] != bytes) slot = (slot + 1) & mask_;
  return slot;
}

TokenId BytePairEncoder::rank_of(std::string_view bytes) const {
  const TokenId stored = slots_[slot_of(bytes)];
  return stored - 1;
}

const std::string* BytePairEncoder::bytes_of(TokenId id) const {
  if (id < 0 || id >= rank_end() || !present_[size_t(id)]) return nullptr;
  return &by_rank_[size_t(id)];
}

void BytePairEncoder::encode_piece(std::string_view piece, std::vector<TokenId>& out) const {
  const TokenId whole = rank_of(piece);
  if (whole >= 0) {
    out.push_back(whole);
  } else if (piece.size() < kHeapMergeLength) {
    merge_linear(piece, out);
  } else {
    merge_heap(piece, out);
  }
}

void BytePairEncoder::merge_linear(std::string_view piece, std::vector<TokenId>& out) const {
  const size_t n = piece.size();
  if (n == 1) {
    out.push_back(rank_of(piece));
    return;
  }
  struct Part {
    uint32_t start;
    TokenId rank;  // the rank of this part joined with the next one
  };
  // parts[k].start for k = 0..n, the last one the end sentinel.
  Part stack_parts[kHeapMergeLength + 1];
  std::vector<Part> heap_parts;
  Part* parts = stack_parts;
  if (n + 1 > kHeapMergeLength + 1) {
    heap_parts.resize(n + 1);
    parts = heap_parts.data();
  }
  size_t count = n + 1;
  const auto pair_rank = [&](size_t k) {  // the rank of parts k and k+1 joined
    if (k + 2 >= count) return kNoRank;
    const TokenId r = rank_of(piece.substr(parts[k].start, parts[k + 2].start - parts[k].start));
    return r < 0 ? kNoRank : r;
  };
  for (size_t k = 0; k < n; ++k) parts[k].start = uint32_t(k);
  parts[n] = {uint32_t(n), kNoRank};
  for (size_t k = 0; k < n; ++k) parts[k].rank = pair_rank(k);
  while (true) {
    TokenId best = kNoRank;
    size_t at = 0;
    for (size_t k = 0; k + 1 < count; ++k)
      if (parts[k].rank < best) {
        best = parts[k].rank;
        at = k;
      }
    if (best == kNoRank) break;
    std::memmove(&parts[at + 1], &parts[at + 2], (count - at - 2) * sizeof(Part));
    --count;
    parts[at].rank = pair_rank(at);
    if (at > 0) parts[at - 1].rank = pair_rank(at - 1);
  }
  for (size_t k = 0; k + 1 < count; ++k)
    out.push_back(rank_of(piece.substr(parts[k].start, parts[k + 1].start - parts[k].start)));
}

void BytePairEncoder::merge_heap(std::string_view piece, std::vector<TokenId>& out) const {
  const size_t n = piece.size();
  // A doubly linked list of parts over byte positions; next_[k] == n marks the last part.
  std::vector<uint32_t> next(n), prev(n);
  std::vector<TokenId> rank(n, kNoRank);  // the rank of part k joined with its successor
  std::vector<bool> alive(n, true);
  for (size_t k = 0; k < n; ++k) {
    next[k] = uint32_t(k + 1);
    prev[k] = uint32_t(k == 0 ? n : k - 1);
  }
  const auto joined_rank = [&](uint32_t k) {
    if (next[k] >= n) return kNoRank;
    const uint32_t end = next[next[k]] >= n ? uint32_t(n) : next[next[k]];
    const TokenId r = rank_of(piece.substr(k, end - k));
    return r < 0 ? kNoRank : r;
  };
  using Entry = std::pair<TokenId, uint32_t>;  // (rank, start): the smallest rank, then the leftmost
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  for (uint32_t k = 0; k < n; ++k) {
    rank[k] = joined_rank(k);
    if (rank[k] != kNoRank) heap.push({rank[k], k});
  }
  while (!heap.empty()) {
    const auto [r, k] = heap.top();
    heap.pop();
    if (!alive[k] || rank[k] != r) continue;  // stale
    const uint32_t gone = next[k];
    alive[gone] = false;
    next[k] = next[gone];
    if (next[k] < n) prev[next[k]] = k;
    rank[k] = joined_rank(k);
    if (rank[k] != kNoRank) heap.push({rank[k], k});
    if (prev[k] < n) {
      const uint32_t p = prev[k];
      rank[p] = joined_rank(p);
      if (rank[p] != kNoRank) heap.push({rank[p], p});
    }
  }
  for (uint32_t k = 0; k < n; k = next[k]) {
    const uint32_t end = next[k] >= n ? uint32_t(n) : next[k];
    out.push_back(rank_of(piece.substr(k, end - k)));
  }
}

}  // namespace moh::text
