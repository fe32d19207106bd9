// The Tokenizer interface's shared parts: special-token splitting and loading by content.
#include "data/text/tokenizer.h"

#include <bitset>

#include "core/error.h"
#include "data/text/char_tokenizer.h"
#include "data/text/file_bytes.h"
#include "data/text/hf_bpe_tokenizer.h"
#include "data/text/sentencepiece_tokenizer.h"
#include "data/text/tiktoken_ranks.h"
#include "data/text/tiktoken_tokenizer.h"

namespace moh::text {
namespace {

struct SpecialMatch {
  size_t at = std::string_view::npos;
  const std::pair<const std::string, TokenId>* token = nullptr;
};

// The leftmost special token in text[from...] (the longest when several start there).
SpecialMatch find_special(std::string_view text, size_t from, const std::map<std::string, TokenId>& specials,
                          const std::bitset<256>& first_bytes) {
  for (size_t at = from; at < text.size(); ++at) {
    if (!first_bytes[uint8_t(text[at])]) continue;
    SpecialMatch best;
    for (const auto& entry : specials)
      if (text.compare(at, entry.first.size(), entry.first) == 0 &&
          (!best.token || entry.first.size() > best.token->first.size())) {
        best.at = at;
        best.token = &entry;
      }
    if (best.token) return best;
  }
  return {};
}

}  // namespace

std::vector<TokenId> Tokenizer::encode_ordinary(std::string_view text) const {
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3);
  encode_ordinary_into(text, ids);
  return ids;
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, const AllowedSpecial& allowed) const {
  std::bitset<256> first_bytes;
  for (const auto& [token, id] : special_tokens_) first_bytes.set(uint8_t(token[0]));
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3);
  size_t start = 0;
  while (true) {
    const SpecialMatch match = find_special(text, start, special_tokens_, first_bytes);
    if (!match.token) break;
    MOH_CHECK(allowed.allows(match.token->first), "the text contains the special token '", match.token->first,
              "' at byte ", match.at, ", which is not allowed here (allow it, or encode it as ordinary text)");
    encode_ordinary_into(text.substr(start, match.at - start), ids);
    ids.push_back(match.token->second);
    start = match.at + match.token->first.size();
  }
  encode_ordinary_into(text.substr(start), ids);
  return ids;
}

std::optional<TokenId> Tokenizer::end_of_text() const {
  for (const char* name : {"<|endoftext|>", "<|end_of_text|>"}) {
    const auto it = special_tokens_.find(name);
    if (it != special_tokens_.end()) return it->second;
  }
  return std::nullopt;
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  std::string bytes = read_file_bytes(path);
  if (looks_like_tiktoken_ranks(bytes)) return load_tiktoken(bytes, path);
  if (looks_like_char_tokenizer(bytes)) return parse_char_tokenizer(bytes, path);
  if (looks_like_hf_tokenizer(bytes)) return std::make_unique<HfBpeTokenizer>(bytes, path);
  if (looks_like_sentencepiece_model(bytes)) return std::make_unique<SentencePieceTokenizer>(bytes, path);
  MOH_FAIL("'", path, "' is not a tokenizer moh can read (expected a tiktoken ranks file: lines of "
           "'<base64 token> <rank>', a Hugging Face tokenizer.json, a SentencePiece .model or a moh_char JSON file)");
}

}  // namespace moh::text
