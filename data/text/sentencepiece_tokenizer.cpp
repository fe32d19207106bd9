// SentencePiece models through libsentencepiece (see sentencepiece_tokenizer.h).
#include "data/text/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <unordered_map>

#include "core/error.h"

namespace moh::text {

SentencePieceTokenizer::SentencePieceTokenizer(std::string_view serialized, const std::string& path)
    : what_(str_cat("SentencePiece model '", path, "'")),
      processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  const auto status = processor_->LoadFromSerializedProto({serialized.data(), serialized.size()});
  MOH_CHECK(status.ok(), "'", path, "' is not a SentencePiece model: ", status.ToString());
  MOH_CHECK(processor_->GetPieceSize() > 0, what_, ": no pieces");
  for (int id = 0; id < processor_->GetPieceSize(); ++id)
    if (processor_->IsControl(id)) special_tokens_.emplace(processor_->IdToPiece(id), id);
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

TokenId SentencePieceTokenizer::vocab_size() const { return processor_->GetPieceSize(); }

std::optional<TokenId> SentencePieceTokenizer::end_of_text() const {
  const int eos = processor_->eos_id();
  return eos >= 0 ? std::optional<TokenId>(eos) : std::nullopt;
}

void SentencePieceTokenizer::encode_ordinary_into(std::string_view text, std::vector<TokenId>& out) const {
  std::vector<int> ids;
  const auto status = processor_->Encode({text.data(), text.size()}, &ids);
  MOH_CHECK(status.ok(), what_, ": encoding failed: ", status.ToString());
  out.insert(out.end(), ids.begin(), ids.end());
}

std::string SentencePieceTokenizer::decode(std::span<const TokenId> ids) const {
  std::string out, piece_text;
  std::vector<int> run;
  const auto flush = [&] {
    if (run.empty()) return;
    const auto status = processor_->Decode(run, &piece_text);
    MOH_CHECK(status.ok(), what_, ": decoding failed: ", status.ToString());
    out += piece_text;
    run.clear();
  };
  for (const TokenId id : ids) {
    MOH_CHECK(id >= 0 && id < vocab_size(), what_, ": cannot decode id ", id, " (not a token of this vocabulary of ",
              vocab_size(), ")");
    if (processor_->IsControl(id)) {
      flush();
      out += processor_->IdToPiece(id);
    } else {
      run.push_back(id);
    }
  }
  flush();
  return out;
}

bool looks_like_sentencepiece_model(std::string_view bytes) {
  // A ModelProto starts with its repeated `pieces` field (field 1, length-delimited: tag 0x0a).
  return !bytes.empty() && bytes[0] == '\x0a';
}

void train_sentencepiece(const SentencePieceTraining& t) {
  MOH_CHECK(!t.inputs.empty(), "sentencepiece training needs input files");
  MOH_CHECK(t.vocab_size >= 260, "--vocab-size must be at least 260 (256 byte pieces + specials), got ", t.vocab_size);
  const std::string suffix = ".model";
  MOH_CHECK(t.model_path.size() > suffix.size() && t.model_path.compare(t.model_path.size() - suffix.size(),
                                                                       suffix.size(), suffix) == 0,
            "the SentencePiece model path must end in .model, got '", t.model_path, "'");
  std::string inputs;
  for (const std::string& f : t.inputs) inputs += (inputs.empty() ? "" : ",") + f;
  const std::unordered_map<std::string, std::string> options = {
      {"input", inputs},
      {"model_prefix", t.model_path.substr(0, t.model_path.size() - suffix.size())},
      {"vocab_size", std::to_string(t.vocab_size)},
      {"model_type", "bpe"},
      {"byte_fallback", "true"},
      {"character_coverage", "0.99995"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"split_digits", "true"},
      {"allow_whitespace_only_pieces", "true"},
      {"max_sentence_length", "1000000"},
      {"num_threads", std::to_string(t.threads)},
      {"minloglevel", "2"},
  };
  const auto status = sentencepiece::SentencePieceTrainer::Train(options);
  MOH_CHECK(status.ok(), "sentencepiece training into '", t.model_path, "' failed: ", status.ToString());
}

}  // namespace moh::text
