// TiktokenTokenizer: byte-level BPE exactly as OpenAI's tiktoken encodes (the BytePairEncoder ranks,
// a SplitPattern, special tokens whose ids lie outside the ranks). The OpenAI encodings are known by
// name and by the number of ranks in their file, which gives their split pattern and special tokens:
//   r50k_base (= gpt2) 50256 ranks, p50k_base 50280, cl100k_base 100256, o200k_base 199998, and
//   LLaMA-3's tokenizer.model 128000 (the cl100k pattern; 256 special tokens from 128000).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/text/byte_pair_encoder.h"
#include "data/text/split_pattern.h"
#include "data/text/tokenizer.h"

namespace moh::text {

struct TiktokenEncoding {
  std::string name;
  size_t rank_count;
  const char* pattern;
  std::map<std::string, TokenId> special_tokens;
};
const std::vector<TiktokenEncoding>& tiktoken_encodings();

class TiktokenTokenizer : public Tokenizer {
 public:
  // `what` names the source in errors and description().
  TiktokenTokenizer(std::vector<std::pair<std::string, TokenId>> ranks, const std::string& pattern,
                    std::map<std::string, TokenId> special_tokens, std::string what);

  std::string decode(std::span<const TokenId> ids) const override;
  TokenId vocab_size() const override { return vocab_size_; }
  std::string description() const override { return what_; }
  void encode_ordinary_into(std::string_view text, std::vector<TokenId>& out) const override;

  const BytePairEncoder& encoder() const { return bpe_; }

 private:
  BytePairEncoder bpe_;
  SplitPattern pattern_;
  std::map<TokenId, std::string> special_by_id_;
  TokenId vocab_size_;
  std::string what_;
};

// A tokenizer from the bytes of a ranks file whose encoding is recognised by its rank count
// (`path` names it in errors).
std::unique_ptr<TiktokenTokenizer> load_tiktoken(std::string_view ranks_text, const std::string& path);

}  // namespace moh::text
