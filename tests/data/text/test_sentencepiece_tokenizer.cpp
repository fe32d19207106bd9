// SentencePiece: a model trained by Debian's spm_train encodes every test line to spm_encode's ids
// (tests/reference/make_text_fixtures.js) and decodes back; control pieces are the special tokens;
// train_sentencepiece makes a working byte-fallback BPE model (the same pieces as spm_train with the
// same options, where spm_train is installed); damaged models are errors naming the file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "data/text/file_bytes.h"
#include "data/text/sentencepiece_tokenizer.h"
#include "data/text/tiktoken_ranks.h"
#include "tests/data/text/text_test_util.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using text::TokenId;

const text::Tokenizer& kjv_model() {
  static const auto tok = text::load_tokenizer(test::text_fixture("kjv_bpe1000.model"));
  return *tok;
}

TEST(SentencePieceTokenizer, IdsEqualSpmEncode) {
  const auto goldens = nlohmann::json::parse(text::read_file_bytes(test::text_fixture("spm_goldens.json.gz")));
  const auto& lines = goldens.at("lines");
  ASSERT_GE(lines.size(), 80u);
  size_t byte_pieces = 0;
  for (size_t k = 0; k < lines.size(); ++k) {
    const std::string line = lines[k];
    const std::vector<TokenId> ids = kjv_model().encode_ordinary(line);
    EXPECT_EQ(ids, goldens.at("ids")[k].get<std::vector<TokenId>>()) << "line " << k << ": " << line;
    EXPECT_EQ(kjv_model().decode(ids), line) << "line " << k;
    byte_pieces += size_t(std::count_if(ids.begin(), ids.end(), [](TokenId id) { return id >= 3 && id < 259; }));
  }
  EXPECT_GT(byte_pieces, 100u);  // emoji and CJK fell back to bytes
}

TEST(SentencePieceTokenizer, ControlPiecesAreSpecialTokens) {
  const text::Tokenizer& tok = kjv_model();
  EXPECT_EQ(tok.vocab_size(), 1000);
  EXPECT_EQ(tok.special_tokens(), (std::map<std::string, TokenId>{{"<s>", 1}, {"</s>", 2}}));
  EXPECT_EQ(tok.end_of_text(), 2);
  const std::vector<TokenId> ids = tok.encode("In the</s>end", text::AllowedSpecial::all());
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 1);
  EXPECT_EQ(tok.decode(ids), "In the</s>end");
  const std::vector<TokenId> ordinary = tok.encode_ordinary("In the</s>end");
  EXPECT_EQ(std::count(ordinary.begin(), ordinary.end(), 2), 0);
  test::expect_error([&] { tok.decode(std::vector<TokenId>{1000}); }, {"kjv_bpe1000.model", "cannot decode id 1000"});
}

class SentencePieceTraining : public test::TempDirTest {};

TEST_F(SentencePieceTraining, TrainsAByteFallbackBpeLikeSpmTrain) {
  // The KJV passages of the tiktoken goldens as the corpus.
  const auto goldens = nlohmann::json::parse(text::read_file_bytes(test::text_fixture("tiktoken_goldens.json.gz")));
  std::string corpus;
  for (const auto& c : goldens.at("r50k_base").at("cases"))
    if (c.at("name").get<std::string>().rfind("kjv_", 0) == 0) {
      std::string text;
      ASSERT_TRUE(text::decode_base64(c.at("text_b64").get<std::string>(), text));
      corpus += text + "\n";
    }
  const std::string input = write("corpus.txt", corpus);
  text::train_sentencepiece({{input}, path("ours.model"), 400, 1});
  const auto tok = text::load_tokenizer(path("ours.model"));
  EXPECT_EQ(tok->vocab_size(), 400);
  EXPECT_EQ(tok->end_of_text(), 2);
  const std::string line = "And God said, Let there be light: 日本 👋 1234";
  const std::vector<TokenId> ids = tok->encode_ordinary(line);
  EXPECT_EQ(tok->decode(ids), line);
  EXPECT_LT(tok->encode_ordinary("And God said, Let there be light").size(), 20u);

  if (std::system("command -v spm_train >/dev/null 2>&1") != 0) GTEST_SKIP() << "spm_train not installed";
  const std::string spm = "spm_train --input=" + input + " --model_prefix=" + path("spm") +
                          " --vocab_size=400 --model_type=bpe --byte_fallback=true --character_coverage=0.99995"
                          " --normalization_rule_name=identity --remove_extra_whitespaces=false --split_digits=true"
                          " --allow_whitespace_only_pieces=true --max_sentence_length=1000000 --num_threads=1"
                          " --minloglevel=2 >/dev/null 2>&1";
  ASSERT_EQ(std::system(spm.c_str()), 0);
  const auto reference = text::load_tokenizer(path("spm.model"));
  for (TokenId id = 0; id < 400; ++id) {  // the same pieces in the same order
    const std::vector<TokenId> one{id};
    ASSERT_EQ(tok->decode(one), reference->decode(one)) << "piece " << id;
  }
  EXPECT_EQ(tok->encode_ordinary(corpus), reference->encode_ordinary(corpus));
}

TEST_F(SentencePieceTraining, BadOptionsAndDamagedModelsAreErrors) {
  const std::string input = write("corpus.txt", "tiny corpus\n");
  test::expect_error([&] { text::train_sentencepiece({{input}, path("m.model"), 100, 1}); }, {"at least 260"});
  test::expect_error([&] { text::train_sentencepiece({{input}, path("m.bin"), 300, 1}); }, {"must end in .model"});
  test::expect_error([&] { text::train_sentencepiece({{path("none.txt")}, path("m.model"), 300, 1}); },
                     {"m.model", "failed"});
  const std::string model = text::read_file_bytes(test::text_fixture("kjv_bpe1000.model"));
  const std::string cut = write("cut.model", model.substr(0, model.size() / 2));
  test::expect_error([&] { text::load_tokenizer(cut); }, {"cut.model", "is not a SentencePiece model"});
}

}  // namespace
}  // namespace moh
