// SentencePieceTokenizer: a SentencePiece `.model` (serialized ModelProto, e.g. LLaMA-2's) through the
// SentencePiece library, behind the Tokenizer interface. Control pieces (<s>, </s>, ...) are the
// special tokens and decode to their piece strings; </s> is the end-of-text. What SentencePiece does
// to text stays as it is: its normalizer runs (identity for models trained by train_sentencepiece),
// and invalid UTF-8 becomes U+FFFD, so only valid UTF-8 round-trips (with an identity normalizer).
// train_sentencepiece trains a LLaMA-2-style model: BPE with byte fallback, identity normalization,
// whitespace kept, digits split.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/text/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace moh::text {

class SentencePieceTokenizer : public Tokenizer {
 public:
  // The bytes of a .model file; `path` names it in errors.
  SentencePieceTokenizer(std::string_view serialized, const std::string& path);
  ~SentencePieceTokenizer() override;

  std::string decode(std::span<const TokenId> ids) const override;
  TokenId vocab_size() const override;
  std::optional<TokenId> end_of_text() const override;
  std::string description() const override { return what_; }
  void encode_ordinary_into(std::string_view text, std::vector<TokenId>& out) const override;

 private:
  std::string what_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

// True when `bytes` start like a serialized ModelProto (tried after the other formats; the
// constructor then reports a damaged model).
bool looks_like_sentencepiece_model(std::string_view bytes);

struct SentencePieceTraining {
  std::vector<std::string> inputs;  // text files, one sentence per line
  std::string model_path;           // <prefix>.model (and <prefix>.vocab beside it)
  int vocab_size = 8000;
  int threads = 1;
};
void train_sentencepiece(const SentencePieceTraining& training);

}  // namespace moh::text
