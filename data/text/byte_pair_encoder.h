// BytePairEncoder: tiktoken's byte-level BPE. The vocabulary is a set of byte strings, each with a
// rank (its id); a piece that is itself a token is that token, otherwise its bytes are merged
// greedily: repeatedly join the adjacent pair whose concatenation has the lowest rank (the leftmost
// on ties) until no adjacent concatenation is a token. Invariant: every single byte 0..255 is a
// token, so every piece encodes and decode(encode(x)) == x for any bytes. Ranks need not be dense
// (p50k skips 50256); ids in the gaps do not decode. Immutable after construction; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace moh::text {

using TokenId = int32_t;

class BytePairEncoder {
 public:
  // (token bytes, rank) pairs; `what` names their source in errors (duplicate token or rank,
  // a missing single byte).
  BytePairEncoder(std::vector<std::pair<std::string, TokenId>> ranks, const std::string& what);

  // Appends the ids of one piece to `out`.
  void encode_piece(std::string_view piece, std::vector<TokenId>& out) const;
  // The rank of exactly these bytes, or -1.
  TokenId rank_of(std::string_view bytes) const;
  // The bytes of a rank, or nullptr when it is not one (outside the table or in a gap).
  const std::string* bytes_of(TokenId id) const;
  // One past the largest rank.
  TokenId rank_end() const { return TokenId(by_rank_.size()); }
  size_t size() const { return count_; }

  // Pieces at least this long are merged with a heap instead of the linear scan (same result).
  static constexpr size_t kHeapMergeLength = 128;
  // Exposed for the test that checks both strategies agree.
  void merge_linear(std::string_view piece, std::vector<TokenId>& out) const;
  void merge_heap(std::string_view piece, std::vector<TokenId>& out) const;

 private:
  uint64_t slot_of(std::string_view bytes) const;

  std::vector<std::string> by_rank_;  // "" for ranks not in the table
  std::vector<bool> present_;
  size_t count_ = 0;
  // Open addressing: each slot holds rank + 1 (0 = empty); probing is linear.
  std::vector<TokenId> slots_;
  uint64_t mask_ = 0;
};

}  // namespace moh::text
