// Character-level tokenizer: trained on files it has one id per distinct character in code point
// order plus <|endoftext|>, round-trips text of its characters, refuses unknown characters and
// invalid UTF-8 by byte offset, and its JSON file loads back (damaged ones are errors naming the file).
#include <gtest/gtest.h>

#include <fstream>

#include "data/text/char_tokenizer.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using text::TokenId;

class CharTokenizerTest : public test::TempDirTest {};

TEST_F(CharTokenizerTest, TrainsEncodesAndRoundTripsThroughItsFile) {
  const std::string a = write("a.txt", "hello wörld\n"), b = write("b.txt", "日本 ok!");
  const text::CharTokenizer tok = text::train_char_tokenizer({a, b}, path("chars.json"));
  EXPECT_EQ(tok.chars(), (std::vector<std::string>{"\n", " ", "!", "d", "e", "h", "k", "l", "o", "r", "w", "ö", "日", "本"}));
  EXPECT_EQ(tok.vocab_size(), 15);
  EXPECT_EQ(tok.end_of_text(), 14);
  EXPECT_EQ(tok.encode_ordinary("hello"), (std::vector<TokenId>{5, 4, 7, 7, 8}));
  const std::string text = "wörld 日本!\nok";
  EXPECT_EQ(tok.decode(tok.encode_ordinary(text)), text);
  EXPECT_EQ(tok.encode("ok<|endoftext|>", text::AllowedSpecial::all()), (std::vector<TokenId>{8, 6, 14}));

  std::ofstream(path("chars.json")) << tok.to_json();
  const auto loaded = text::load_tokenizer(path("chars.json"));
  EXPECT_EQ(loaded->encode_ordinary(text), tok.encode_ordinary(text));
  EXPECT_EQ(loaded->vocab_size(), 15);
}

TEST_F(CharTokenizerTest, UnknownCharactersAndDamagedFilesAreErrors) {
  const text::CharTokenizer tok({"a", "b"}, "tiny");
  test::expect_error([&] { tok.encode_ordinary("abz"); }, {"tiny", "character 'z' at byte 2", "not in the vocabulary"});
  test::expect_error([&] { tok.encode_ordinary("a\xff"); }, {"tiny", "invalid UTF-8 at byte 1"});
  test::expect_error([&] { tok.decode(std::vector<TokenId>{3}); }, {"tiny", "cannot decode id 3"});
  test::expect_error([&] { text::train_char_tokenizer({write("bad.txt", "ok\xc3")}, "m.json"); },
                     {"bad.txt", "invalid UTF-8 at byte 2"});
  const std::vector<std::pair<std::string, std::string>> files = {
      {R"({"type": "moh_char", "chars": ["a", "a"]})", "'a' appears twice"},
      {R"({"type": "moh_char", "chars": ["ab"]})", "entry 0 is not exactly one UTF-8 character"},
      {R"({"type": "moh_char", "chars": [1]})", "chars must be strings"},
      {R"({"type": "moh_char", "chars": []})", "no characters"},
      {R"({"type": "moh_char", "chars": ["a")", "is not valid JSON"},
  };
  for (const auto& [json, message] : files) {
    const std::string file = write("chars.json", json);
    test::expect_error([&] { text::load_tokenizer(file); }, {file, message});
  }
}

}  // namespace
}  // namespace moh
