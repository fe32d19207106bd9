// HfBpeTokenizer: a Hugging Face `tokenizer.json` with a byte-level BPE model (GPT-2, LLaMA-3 and
// every tiktoken-converted vocabulary). Supported forms, anything else is refused with the key named:
//   normalizer null; pre_tokenizer ByteLevel(use_regex: true) = the GPT-2 pattern, or
//   Sequence[Split(Regex, behavior Isolated), ByteLevel(use_regex: false)]; add_prefix_space false;
//   model BPE without dropout, byte fallback, subword prefix or word suffix; merges as "a b" strings
//   or [a, b] pairs; ignore_merges (a piece that is a token is that token).
// Vocabulary strings are byte-level spelled (GPT-2's byte -> character map) and are stored as bytes.
// A piece starts as its single-byte tokens and the adjacent pair with the lowest merge rank is
// merged (leftmost on ties) until no listed merge applies, as HF's BPE does. added_tokens are the
// special tokens (HF splits them out of any text; here that is encode(text, AllowedSpecial::all())).
// Invalid UTF-8 and \s follow SplitPattern's rules.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/text/split_pattern.h"
#include "data/text/tokenizer.h"

namespace moh::text {

class HfBpeTokenizer : public Tokenizer {
 public:
  // Parses the text of a tokenizer.json; `path` names it in errors.
  HfBpeTokenizer(std::string_view json_text, const std::string& path);

  std::string decode(std::span<const TokenId> ids) const override;
  TokenId vocab_size() const override { return vocab_size_; }
  std::string description() const override { return what_; }
  void encode_ordinary_into(std::string_view text, std::vector<TokenId>& out) const override;

 private:
  struct Merge {
    int32_t rank;
    TokenId merged;
  };
  void encode_piece(std::string_view piece, std::vector<TokenId>& out) const;
  const Merge* find_merge(TokenId left, TokenId right) const;

  std::string what_;
  std::unique_ptr<SplitPattern> pattern_;
  std::vector<std::string> bytes_by_id_;
  std::vector<bool> has_id_;
  std::unordered_map<std::string, TokenId> id_by_bytes_;
  TokenId byte_ids_[256];
  std::unordered_map<uint64_t, Merge> merges_;  // (left << 32 | right) -> rank and result
  bool ignore_merges_ = false;
  TokenId vocab_size_ = 0;
};

// True when `text` is a JSON object with a "model" key (the first bytes are checked cheaply).
bool looks_like_hf_tokenizer(std::string_view text);

}  // namespace moh::text
