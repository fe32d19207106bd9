// HF tokenizer.json (byte-level BPE): the r50k_base tokenizer.json written by
// tests/reference/make_text_fixtures.js from the same ranks encodes every tiktoken golden identically
// and agrees with the ranks tokenizer on random bytes (cl100k_base's too where the reference is
// installed); unsupported or damaged files are errors naming the file and the key.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include <nlohmann/json.hpp>

#include "data/text/file_bytes.h"
#include "data/text/hf_bpe_tokenizer.h"
#include "data/text/tiktoken_ranks.h"
#include "tests/data/text/text_test_util.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using nlohmann::json;
using text::TokenId;

std::string hf_path(const std::string& encoding) {
  return encoding == "r50k_base" ? test::text_fixture("r50k_base.tokenizer.json.gz")
                                 : MOH_TEST_PATH(MOH_SOURCE_DIR) + "/tests/reference/node/" + encoding + ".tokenizer.json.gz";
}

class HfEquivalence : public ::testing::TestWithParam<std::string> {};

TEST_P(HfEquivalence, EncodesLikeTheRanksItWasWrittenFrom) {
  const std::string path = hf_path(GetParam());
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is made by tests/reference/make_text_fixtures.js";
  const auto hf = text::load_tokenizer(path);
  const text::Tokenizer& ranks = test::fixture_tokenizer(GetParam());
  EXPECT_EQ(hf->vocab_size(), ranks.vocab_size());
  EXPECT_EQ(hf->special_tokens(), ranks.special_tokens());
  EXPECT_EQ(hf->end_of_text(), ranks.end_of_text());

  const json goldens = json::parse(text::read_file_bytes(test::text_fixture("tiktoken_goldens.json.gz")));
  for (const auto& c : goldens.at(GetParam()).at("cases")) {
    std::string text;
    if (!c.at("text_b64").get<std::string>().empty()) ASSERT_TRUE(text::decode_base64(c.at("text_b64").get<std::string>(), text));
    const auto ids = c.at("mode") == "all" ? hf->encode(text, text::AllowedSpecial::all()) : hf->encode_ordinary(text);
    EXPECT_EQ(ids, c.at("ids").get<std::vector<TokenId>>()) << c.at("name");
    EXPECT_EQ(hf->decode(ids), text) << c.at("name");
  }
  std::mt19937 rng(3);
  for (int k = 0; k < 200; ++k) {
    std::string bytes(size_t(rng() % 400), '\0');
    for (char& b : bytes) b = k % 2 ? char(rng()) : "ab  \n'sé"[rng() % 9];
    ASSERT_EQ(hf->encode_ordinary(bytes), ranks.encode_ordinary(bytes)) << "random string " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Encodings, HfEquivalence, ::testing::Values("r50k_base", "cl100k_base"));

class HfTokenizerFiles : public test::TempDirTest {
 protected:
  // The committed r50k tokenizer.json cut to ids below 1000 and the merges among them: small enough
  // to rewrite per case, and still a complete byte-level BPE.
  static const json& base() {
    static const json j = [] {
      json full = json::parse(text::read_file_bytes(test::text_fixture("r50k_base.tokenizer.json.gz")));
      json vocab = json::object(), merges = json::array();
      for (const auto& [token, id] : full["model"]["vocab"].items())
        if (id.get<int>() < 1000) vocab[token] = id;
      for (const json& m : full["model"]["merges"]) {
        const std::string l = m[0], r = m[1];
        if (vocab.contains(l) && vocab.contains(r) && vocab.contains(l + r)) merges.push_back(m);
      }
      full["model"]["vocab"] = vocab;
      full["model"]["merges"] = merges;
      full["added_tokens"][0]["id"] = 1000;
      return full;
    }();
    return j;
  }
  void expect_refused(const json& j, const std::vector<std::string>& parts) {
    const std::string file = write("tokenizer.json", j.dump());
    std::vector<std::string> all = parts;
    all.push_back(file);
    test::expect_error([&] { text::load_tokenizer(file); }, all);
  }
};

TEST_F(HfTokenizerFiles, ReadsStringMergesAndTheSequencePreTokenizer) {
  json j = base();
  for (json& m : j["model"]["merges"]) m = m[0].get<std::string>() + " " + m[1].get<std::string>();
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers",
                         {{{"type", "Split"}, {"pattern", {{"Regex", text::kGpt2SplitPattern}}}, {"behavior", "Isolated"},
                           {"invert", false}},
                          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  const auto strings = text::load_tokenizer(write("strings.json", j.dump()));
  const auto pairs = text::load_tokenizer(write("pairs.json", base().dump()));
  const std::string text = "Hello world, it's 2024!\n\n  ok";
  const std::vector<TokenId> ids = strings->encode_ordinary(text);
  EXPECT_EQ(ids, pairs->encode_ordinary(text));
  EXPECT_LT(ids.size(), 20u);  // merges were applied (the text has 29 bytes)
  EXPECT_EQ(strings->decode(ids), text);
}

TEST_F(HfTokenizerFiles, RefusesWhatItCannotEncodeFaithfully) {
  json j = base();
  j["normalizer"] = {{"type", "NFC"}};
  expect_refused(j, {"normalizer must be null"});
  j = base();
  j["model"]["type"] = "WordPiece";
  expect_refused(j, {"model type 'WordPiece'"});
  j = base();
  j["model"]["byte_fallback"] = true;
  expect_refused(j, {"byte_fallback"});
  j = base();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  expect_refused(j, {"pre_tokenizer 'Whitespace' is not supported"});
  j = base();
  j["pre_tokenizer"]["add_prefix_space"] = true;
  expect_refused(j, {"add_prefix_space"});
  j = base();
  j["model"]["vocab"].erase("a");
  expect_refused(j, {"byte 97 has no token"});
  j = base();
  j["model"]["vocab"]["caf\xc3\xa9\xe2\x82\xac"] = 1001;
  expect_refused(j, {"is not byte-level spelled"});
  j = base();
  j["model"]["merges"].push_back({"Ġt", "zzzzqq"});
  expect_refused(j, {"merge " + std::to_string(base()["model"]["merges"].size()), "not in the vocabulary"});
  j = base();
  j["model"]["merges"][5] = "no-space";
  expect_refused(j, {"merge 5", "is not 'left right'"});
  j = base();
  j["model"].erase("vocab");
  expect_refused(j, {"no 'vocab'"});
  test::expect_error([&] { text::load_tokenizer(write("cut.json", base().dump().substr(0, 5000))); },
                     {"cut.json", "is not valid JSON"});
}

}  // namespace
}  // namespace moh
