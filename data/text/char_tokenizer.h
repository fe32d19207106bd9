// CharTokenizer: one id per character (Unicode code point) for tiny corpora, as nanoGPT's
// shakespeare_char: ids 0..n-1 are the corpus's characters in code point order, then <|endoftext|>.
// A character outside the vocabulary, or invalid UTF-8, is an error naming its byte offset (there is
// no byte fallback), so decode(encode(x)) == x for every text made of the vocabulary's characters.
// File (`moh tokenizer train --kind char`): JSON {"type": "moh_char", "chars": ["\n", " ", "!", ...]}.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/text/tokenizer.h"

namespace moh::text {

class CharTokenizer : public Tokenizer {
 public:
  // `chars`: distinct single characters, each one valid UTF-8 code point. `what` names the source.
  CharTokenizer(std::vector<std::string> chars, std::string what);

  std::string decode(std::span<const TokenId> ids) const override;
  TokenId vocab_size() const override { return TokenId(chars_.size()) + 1; }
  std::string description() const override { return what_; }
  void encode_ordinary_into(std::string_view text, std::vector<TokenId>& out) const override;

  const std::vector<std::string>& chars() const { return chars_; }
  // The JSON file form.
  std::string to_json() const;

 private:
  std::vector<std::string> chars_;
  std::unordered_map<std::string, TokenId> ids_;
  std::string what_;
};

// The characters of the files' text (in code point order); invalid UTF-8 names the file and offset.
CharTokenizer train_char_tokenizer(const std::vector<std::string>& files, const std::string& model_path);

// True when `text` is a moh_char JSON file (cheap check of the type field).
bool looks_like_char_tokenizer(std::string_view text);
// Parses the JSON file form; `path` names it in errors.
std::unique_ptr<CharTokenizer> parse_char_tokenizer(std::string_view json_text, const std::string& path);

}  // namespace moh::text
