// The tiktoken-compatible tokenizer against npm tiktoken's own ids (tests/reference/make_text_fixtures.js):
// KJV text and adversarial text (emoji, CJK, combining marks, Unicode whitespace, long whitespace and
// digit runs, special tokens, random text, invalid UTF-8) for r50k_base and cl100k_base (and
// o200k_base where the reference is installed), token for token; round trips on random bytes; both merge strategies; special-token rules; and every damaged
// ranks file the loader must reject with an error naming the file and line.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <random>

#include <nlohmann/json.hpp>

#include "data/text/file_bytes.h"
#include "data/text/tiktoken_ranks.h"
#include "data/text/tiktoken_tokenizer.h"
#include "tests/data/text/text_test_util.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using text::AllowedSpecial;
using text::TokenId;

const nlohmann::json& goldens() {
  static const nlohmann::json json =
      nlohmann::json::parse(text::read_file_bytes(test::text_fixture("tiktoken_goldens.json.gz")));
  return json;
}

std::string base64(const std::string& b64) {
  std::string out;
  if (!b64.empty()) EXPECT_TRUE(text::decode_base64(b64, out));
  return out;
}

class TiktokenGoldens : public ::testing::TestWithParam<std::string> {};

TEST_P(TiktokenGoldens, IdsEqualTiktokenTokenForToken) {
  std::unique_ptr<text::Tokenizer> uncommitted;
  if (GetParam() == "o200k_base") {  // its ranks are written beside the reference install only
    const std::string ranks = MOH_TEST_PATH(MOH_SOURCE_DIR) + "/tests/reference/node/o200k_base.tiktoken.gz";
    if (!std::filesystem::exists(ranks)) GTEST_SKIP() << ranks << " is made by tests/reference/make_text_fixtures.js";
    uncommitted = text::load_tokenizer(ranks);
  }
  const text::Tokenizer& tok = uncommitted ? *uncommitted : test::fixture_tokenizer(GetParam());
  const nlohmann::json& cases = goldens().at(GetParam()).at("cases");
  ASSERT_GE(cases.size(), 100u);
  size_t tokens = 0;
  for (const auto& c : cases) {
    const std::string name = c.at("name"), text = base64(c.at("text_b64"));
    const auto expected = c.at("ids").get<std::vector<TokenId>>();
    const std::vector<TokenId> ids =
        c.at("mode") == "all" ? tok.encode(text, AllowedSpecial::all()) : tok.encode_ordinary(text);
    tokens += ids.size();
    ASSERT_EQ(ids.size(), expected.size()) << GetParam() << " " << name;
    const auto diff = std::mismatch(ids.begin(), ids.end(), expected.begin());
    EXPECT_TRUE(diff.first == ids.end()) << GetParam() << " " << name << ": first difference at token "
                                         << (diff.first - ids.begin());
    EXPECT_EQ(tok.decode(ids), text) << GetParam() << " " << name;
  }
  EXPECT_GT(tokens, 20000u);
}

INSTANTIATE_TEST_SUITE_P(Encodings, TiktokenGoldens, ::testing::Values("r50k_base", "cl100k_base", "o200k_base"));

TEST(TiktokenTokenizer, RecognisesTheEncodingByRankCount) {
  const text::Tokenizer& r50k = test::fixture_tokenizer("r50k_base");
  const text::Tokenizer& cl100k = test::fixture_tokenizer("cl100k_base");
  EXPECT_EQ(r50k.vocab_size(), 50257);
  EXPECT_EQ(cl100k.vocab_size(), 100277);
  EXPECT_EQ(r50k.end_of_text(), 50256);
  EXPECT_EQ(cl100k.end_of_text(), 100257);
  EXPECT_EQ(cl100k.special_tokens().size(), 5u);
  EXPECT_NE(cl100k.description().find("cl100k_base"), std::string::npos);
}

TEST(TiktokenTokenizer, RoundTripsRandomBytes) {
  std::mt19937 rng(15);
  for (const char* name : {"r50k_base", "cl100k_base"}) {
    const text::Tokenizer& tok = test::fixture_tokenizer(name);
    for (int k = 0; k < 300; ++k) {
      std::string bytes(size_t(rng() % 600), '\0');
      // Half the strings draw from a few bytes so that long repeated pieces and merges occur.
      const uint32_t alphabet = k % 2 ? 256 : 4;
      for (char& b : bytes) b = char(k % 2 ? rng() % alphabet : " a\n\xe4"[rng() % alphabet]);
      EXPECT_EQ(tok.decode(tok.encode_ordinary(bytes)), bytes) << name << " string " << k;
    }
  }
}

TEST(TiktokenTokenizer, HeapAndLinearMergesAgree) {
  const auto& tok = dynamic_cast<const text::TiktokenTokenizer&>(test::fixture_tokenizer("cl100k_base"));
  std::mt19937 rng(7);
  const std::string alphabet = "aabbeeillnorstt  ";
  for (int k = 0; k < 400; ++k) {
    std::string piece(1 + rng() % 300, ' ');
    for (char& c : piece) c = alphabet[rng() % alphabet.size()];
    std::vector<TokenId> linear, heap;
    tok.encoder().merge_linear(piece, linear);
    tok.encoder().merge_heap(piece, heap);
    ASSERT_EQ(linear, heap) << "piece " << k << ": '" << piece << "'";
  }
}

TEST(TiktokenTokenizer, SpecialTokensFollowAllowedSpecial) {
  const text::Tokenizer& tok = test::fixture_tokenizer("cl100k_base");
  const std::string text = "a<|endoftext|>b<|fim_prefix|>";
  EXPECT_EQ(tok.encode(text, AllowedSpecial::all()),
            (std::vector<TokenId>{64, 100257, 65, 100258}));
  test::expect_error([&] { tok.encode(text, AllowedSpecial::none()); }, {"<|endoftext|>", "byte 1", "not allowed"});
  test::expect_error([&] { tok.encode(text, AllowedSpecial::only({"<|endoftext|>"})); }, {"<|fim_prefix|>", "byte 15"});
  const std::vector<TokenId> ordinary = tok.encode_ordinary(text);
  EXPECT_EQ(std::count(ordinary.begin(), ordinary.end(), 100257), 0);
  EXPECT_EQ(tok.decode(ordinary), text);
  EXPECT_EQ(tok.decode(std::vector<TokenId>{100257, 100276}), "<|endoftext|><|endofprompt|>");
  // An unfinished special token is ordinary text even when all are allowed.
  EXPECT_EQ(tok.encode("<|endoftext", AllowedSpecial::none()), tok.encode_ordinary("<|endoftext"));
}

TEST(TiktokenTokenizer, DecodeRejectsIdsOutsideTheVocabulary) {
  const text::Tokenizer& tok = test::fixture_tokenizer("cl100k_base");
  for (TokenId id : {-1, 100256, 100261, 100277, 1 << 30})
    test::expect_error([&] { tok.decode(std::vector<TokenId>{id}); }, {"cannot decode id " + std::to_string(id)});
}

class TiktokenRanksFiles : public test::TempDirTest {
 protected:
  // All 256 single bytes, ranks 0..255, then `extra`.
  static std::string byte_ranks(const std::string& extra = "") {
    static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (int b = 0; b < 256; ++b)
      out += str_cat(digits[b >> 2], digits[(b & 3) << 4], "== ", b, "\n");
    return out + extra;
  }
};

TEST_F(TiktokenRanksFiles, ParsesTheFormat) {
  const auto ranks = text::parse_tiktoken_ranks(byte_ranks("aGVsbG8= 256\r\nIQ== 300"), "test");
  ASSERT_EQ(ranks.size(), 258u);
  EXPECT_EQ(ranks[0], (std::pair<std::string, TokenId>{std::string(1, '\0'), 0}));
  EXPECT_EQ(ranks[256], (std::pair<std::string, TokenId>{"hello", 256}));
  EXPECT_EQ(ranks[257].second, 300);
}

TEST_F(TiktokenRanksFiles, LlamaThreeRanksGetItsSpecialTokens) {
  // A stand-in for Meta's tokenizer.model: 128000 distinct tokens (the bytes, then 3-byte strings).
  std::string ranks = byte_ranks();
  for (TokenId rank = 256; rank < 128000; ++rank) {
    const std::string bytes = {char('a' + (rank >> 14)), char((rank >> 7) & 127), char(rank & 127)};
    static const char* digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const uint32_t v = (uint32_t(uint8_t(bytes[0])) << 16) | (uint32_t(uint8_t(bytes[1])) << 8) | uint8_t(bytes[2]);
    ranks += str_cat(digits[v >> 18], digits[(v >> 12) & 63], digits[(v >> 6) & 63], digits[v & 63], " ", rank, "\n");
  }
  const auto tok = text::load_tokenizer(write("tokenizer.model", ranks));
  EXPECT_NE(tok->description().find("llama3"), std::string::npos);
  EXPECT_EQ(tok->vocab_size(), 128256);
  EXPECT_EQ(tok->special_tokens().size(), 256u);
  EXPECT_EQ(tok->end_of_text(), 128001);
  const std::vector<TokenId> ids = tok->encode("<|begin_of_text|><|start_header_id|>x<|end_header_id|><|eot_id|>",
                                               AllowedSpecial::all());
  EXPECT_EQ(ids, (std::vector<TokenId>{128000, 128006, 'x', 128007, 128009}));
  EXPECT_EQ(tok->special_tokens().at("<|reserved_special_token_250|>"), 128255);
  EXPECT_EQ(tok->decode(std::vector<TokenId>{258}), "a\x02\x02");
}

TEST_F(TiktokenRanksFiles, MalformedLinesNameFileAndLine) {
  for (const std::string bad : {"aGVsbG8=256", "aGVsbG8= x", "aGVsbG8= -4", "aGV*bG8= 4", "aGVsbG8 4", "", "aGVsbG8= 4 5"}) {
    const std::string file = write("bad.tiktoken", byte_ranks(bad + "\nIQ== 7\n"));
    test::expect_error([&] { text::load_tokenizer(file); }, {file, ":257:", "<base64 token> <rank>"});
  }
}

TEST_F(TiktokenRanksFiles, RejectsDuplicatesMissingBytesAndUnknownEncodings) {
  const auto build = [](const std::string& ranks) {
    text::TiktokenTokenizer(text::parse_tiktoken_ranks(ranks, "custom.tiktoken"), text::kGpt2SplitPattern,
                            {{"<|endoftext|>", 300}}, "custom.tiktoken");
  };
  test::expect_error([&] { build(byte_ranks("aGVsbG8= 255\n")); }, {"custom.tiktoken", "rank 255 appears twice"});
  test::expect_error([&] { build(byte_ranks("AA== 256\n")); }, {"custom.tiktoken", "repeats the token of rank 0"});
  std::string no_a = byte_ranks();
  no_a.erase(no_a.find("YQ== 97\n"), 8);
  test::expect_error([&] { build(no_a + "YWE= 97\n"); }, {"custom.tiktoken", "byte 0x61 is not a token"});
  test::expect_error([&] { build(byte_ranks("aGVsbG8= 300\n")); }, {"custom.tiktoken", "'<|endoftext|>' has id 300"});
  test::expect_error([&] { text::load_tokenizer(write("small.tiktoken", byte_ranks())); },
                     {"small.tiktoken", "256 ranks is none of the encodings", "cl100k_base 100256"});
  test::expect_error([&] { text::load_tokenizer(write("words.txt", "hello world\n")); },
                     {"words.txt", "not a tokenizer"});
  test::expect_error([&] { text::load_tokenizer(path("missing.tiktoken")); }, {"missing.tiktoken", "cannot open"});
}

TEST_F(TiktokenRanksFiles, TruncatedGzipIsAnError) {
  std::string packed = text::read_file_bytes(test::text_fixture("r50k_base.tiktoken.gz"));
  std::ifstream in(test::text_fixture("r50k_base.tiktoken.gz"), std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_GT(packed.size(), raw.size());  // it was inflated
  const std::string file = write("cut.tiktoken.gz", raw.substr(0, raw.size() / 2));
  test::expect_error([&] { text::load_tokenizer(file); }, {"cut.tiktoken.gz", "truncated"});
}

}  // namespace
}  // namespace moh
