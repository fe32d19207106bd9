// Character-level tokenizer (see char_tokenizer.h).
#include "data/text/char_tokenizer.h"

#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/text/file_bytes.h"
#include "data/text/utf8.h"

namespace moh::text {
CharTokenizer::CharTokenizer(std::vector<std::string> chars, std::string what)
    : chars_(std::move(chars)), what_(std::move(what)) {
  MOH_CHECK(!chars_.empty(), what_, ": no characters");
  for (size_t k = 0; k < chars_.size(); ++k) {
    const std::string& c = chars_[k];
    MOH_CHECK(!c.empty() && utf8_sequence_length(c, 0) == c.size(), what_, ": entry ", k,
              " is not exactly one UTF-8 character");
    MOH_CHECK(ids_.emplace(c, TokenId(k)).second, what_, ": character '", c, "' appears twice");
  }
  special_tokens_.emplace("<|endoftext|>", TokenId(chars_.size()));
}

void CharTokenizer::encode_ordinary_into(std::string_view text, std::vector<TokenId>& out) const {
  for (size_t at = 0; at < text.size();) {
    const size_t length = utf8_sequence_length(text, at);
    MOH_CHECK(length > 0, what_, ": invalid UTF-8 at byte ", at);
    const auto it = ids_.find(std::string(text.substr(at, length)));
    MOH_CHECK(it != ids_.end(), what_, ": character '", text.substr(at, length), "' at byte ", at,
              " is not in the vocabulary");
    out.push_back(it->second);
    at += length;
  }
}

std::string CharTokenizer::decode(std::span<const TokenId> ids) const {
  std::string out;
  for (const TokenId id : ids) {
    MOH_CHECK(id >= 0 && id < vocab_size(), what_, ": cannot decode id ", id, " (not a token of this vocabulary of ",
              vocab_size(), ")");
    out += id == TokenId(chars_.size()) ? std::string("<|endoftext|>") : chars_[size_t(id)];
  }
  return out;
}

std::string CharTokenizer::to_json() const { return nlohmann::json{{"type", "moh_char"}, {"chars", chars_}}.dump() + "\n"; }

CharTokenizer train_char_tokenizer(const std::vector<std::string>& files, const std::string& model_path) {
  MOH_CHECK(!files.empty(), "character tokenizer training needs input files");
  std::set<std::string> seen;
  for (const std::string& file : files) {
    const std::string text = read_file_bytes(file);
    for (size_t at = 0; at < text.size();) {
      const size_t length = utf8_sequence_length(text, at);
      MOH_CHECK(length > 0, "'", file, "': invalid UTF-8 at byte ", at);
      seen.insert(text.substr(at, length));
      at += length;
    }
  }
  // std::set's byte order of UTF-8 strings is code point order.
  std::vector<std::string> chars(seen.begin(), seen.end());
  return CharTokenizer(std::move(chars), str_cat("character tokenizer '", model_path, "'"));
}

bool looks_like_char_tokenizer(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{' && text.find("\"moh_char\"") != std::string_view::npos;
}

std::unique_ptr<CharTokenizer> parse_char_tokenizer(std::string_view json_text, const std::string& path) {
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    MOH_FAIL("'", path, "' is not valid JSON: ", e.what());
  }
  MOH_CHECK(root.is_object() && root.value("type", "") == "moh_char" && root.contains("chars") &&
                root.at("chars").is_array(),
            "'", path, "': a character tokenizer is {\"type\": \"moh_char\", \"chars\": [...]}");
  std::vector<std::string> chars;
  for (const auto& c : root.at("chars")) {
    MOH_CHECK(c.is_string(), "'", path, "': chars must be strings");
    chars.push_back(c.get<std::string>());
  }
  return std::make_unique<CharTokenizer>(std::move(chars), str_cat("character tokenizer '", path, "'"));
}

}  // namespace moh::text
