// Tokenizer: the one interface of moh's tokenizers (tiktoken-style byte-level BPE, HF
// tokenizer.json, SentencePiece, character-level). Text is bytes (std::string_view), normally UTF-8;
// ids are in [0, vocab_size()). Special tokens (<|endoftext|>, ...) are strings with reserved ids:
// encode_ordinary() treats them as ordinary text; encode() with AllowedSpecial follows tiktoken's
// encode(text, allowed_special): an allowed special token inside the text becomes its id, and any
// other special token found in the text is an error (tiktoken's disallowed_special="all").
// Implementations are immutable after loading and safe to call from several threads.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/text/byte_pair_encoder.h"

namespace moh::text {

// Which special tokens encode() may produce from text.
class AllowedSpecial {
 public:
  static AllowedSpecial none() { return AllowedSpecial(false, {}); }
  static AllowedSpecial all() { return AllowedSpecial(true, {}); }
  static AllowedSpecial only(std::set<std::string> tokens) { return AllowedSpecial(false, std::move(tokens)); }
  bool allows(const std::string& token) const { return all_ || tokens_.count(token) > 0; }

 private:
  AllowedSpecial(bool all, std::set<std::string> tokens) : all_(all), tokens_(std::move(tokens)) {}
  bool all_;
  std::set<std::string> tokens_;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // The ids of `text` with special-token strings encoded as the ordinary text they are.
  std::vector<TokenId> encode_ordinary(std::string_view text) const;
  // tiktoken's encode(text, allowed_special): see the file comment. Errors name the special token
  // and its byte offset.
  std::vector<TokenId> encode(std::string_view text, const AllowedSpecial& allowed) const;
  // The bytes of `ids` (special tokens decode to their strings). An id outside the vocabulary is an error.
  virtual std::string decode(std::span<const TokenId> ids) const = 0;

  // One past the largest id (special tokens included).
  virtual TokenId vocab_size() const = 0;
  // Special token string -> id.
  const std::map<std::string, TokenId>& special_tokens() const { return special_tokens_; }
  // The id that separates documents (<|endoftext|>, </s>, ...), when the tokenizer has one.
  virtual std::optional<TokenId> end_of_text() const;
  // What was loaded, for logs: "cl100k_base (tiktoken ranks '/path')".
  virtual std::string description() const = 0;

  // Appends the ids of ordinary text (no special-token handling) to `out`.
  virtual void encode_ordinary_into(std::string_view text, std::vector<TokenId>& out) const = 0;

 protected:
  std::map<std::string, TokenId> special_tokens_;
};

// Loads a tokenizer file, recognised by its content: a tiktoken ranks file (plain or gzip; the
// encoding is recognised by its rank count, see tiktoken_tokenizer.h), an HF tokenizer.json, a
// SentencePiece .model, a character tokenizer's JSON. Errors name the file and what was expected.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path);

}  // namespace moh::text
