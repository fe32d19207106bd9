// tiktoken-compatible byte-level BPE (see tiktoken_tokenizer.h).
#include "data/text/tiktoken_tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "data/text/tiktoken_ranks.h"

namespace moh::text {

namespace {

// Meta's LLaMA-3 tokenizer.model: 256 special tokens after the 128000 ranks, named as in the original
// llama3 release; 3.1+ renamed some reserved slots (128004, 128005, 128008, 128010, ...) but kept the
// ids of begin/end of text, the header markers and <|eot_id|>.
std::map<std::string, TokenId> llama3_special_tokens() {
  const char* named[] = {"<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                         "<|reserved_special_token_1|>", "<|reserved_special_token_2|>",
                         "<|reserved_special_token_3|>", "<|start_header_id|>", "<|end_header_id|>",
                         "<|reserved_special_token_4|>", "<|eot_id|>"};
  std::map<std::string, TokenId> tokens;
  TokenId id = 128000;
  for (const char* name : named) tokens.emplace(name, id++);
  for (int k = 5; id < 128256; ++k) tokens.emplace(str_cat("<|reserved_special_token_", k, "|>"), id++);
  return tokens;
}

}  // namespace

const std::vector<TiktokenEncoding>& tiktoken_encodings() {
  static const std::vector<TiktokenEncoding> encodings = {
      {"r50k_base", 50256, kGpt2SplitPattern, {{"<|endoftext|>", 50256}}},
      {"p50k_base", 50280, kGpt2SplitPattern, {{"<|endoftext|>", 50256}}},
      {"cl100k_base",
       100256,
       kCl100kSplitPattern,
       {{"<|endoftext|>", 100257},
        {"<|fim_prefix|>", 100258},
        {"<|fim_middle|>", 100259},
        {"<|fim_suffix|>", 100260},
        {"<|endofprompt|>", 100276}}},
      {"o200k_base", 199998, kO200kSplitPattern, {{"<|endoftext|>", 199999}, {"<|endofprompt|>", 200018}}},
      {"llama3", 128000, kCl100kSplitPattern, llama3_special_tokens()},
  };
  return encodings;
}

TiktokenTokenizer::TiktokenTokenizer(std::vector<std::pair<std::string, TokenId>> ranks, const std::string& pattern,
                                     std::map<std::string, TokenId> special_tokens, std::string what)
    : bpe_(std::move(ranks), what), pattern_(pattern, what), what_(std::move(what)) {
  vocab_size_ = bpe_.rank_end();
  for (const auto& [token, id] : special_tokens) {
    MOH_CHECK(!token.empty(), what_, ": empty special token");
    MOH_CHECK(id >= 0 && !bpe_.bytes_of(id), what_, ": special token '", token, "' has id ", id,
              ", which is a rank of the BPE vocabulary");
    const auto [it, inserted] = special_by_id_.emplace(id, token);
    MOH_CHECK(inserted, what_, ": special tokens '", it->second, "' and '", token, "' share id ", id);
    vocab_size_ = std::max(vocab_size_, id + 1);
  }
  special_tokens_ = std::move(special_tokens);
}

void TiktokenTokenizer::encode_ordinary_into(std::string_view text, std::vector<TokenId>& out) const {
  std::vector<Piece> pieces;
  pieces.reserve(text.size() / 4 + 1);
  pattern_.split(text, pieces);
  for (const Piece& p : pieces) bpe_.encode_piece(text.substr(p.begin, p.end - p.begin), out);
}

std::string TiktokenTokenizer::decode(std::span<const TokenId> ids) const {
  std::string out;
  for (const TokenId id : ids) {
    if (const std::string* bytes = bpe_.bytes_of(id)) {
      out += *bytes;
      continue;
    }
    const auto special = special_by_id_.find(id);
    MOH_CHECK(special != special_by_id_.end(), what_, ": cannot decode id ", id,
              " (not a token of this vocabulary of ", vocab_size_, ")");
    out += special->second;
  }
  return out;
}

std::unique_ptr<TiktokenTokenizer> load_tiktoken(std::string_view ranks_text, const std::string& path) {
  auto ranks = parse_tiktoken_ranks(ranks_text, path);
  for (const TiktokenEncoding& encoding : tiktoken_encodings())
    if (encoding.rank_count == ranks.size())
      return std::make_unique<TiktokenTokenizer>(std::move(ranks), encoding.pattern, encoding.special_tokens,
                                                 str_cat(encoding.name, " (tiktoken ranks '", path, "')"));
  std::string known;
  for (const TiktokenEncoding& encoding : tiktoken_encodings())
    known += str_cat(known.empty() ? "" : ", ", encoding.name, " ", encoding.rank_count);
  MOH_FAIL("'", path, "': a tiktoken ranks file of ", ranks.size(), " ranks is none of the encodings moh knows (",
           known, ")");
}

}  // namespace moh::text
