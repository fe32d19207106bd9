// `moh tokenize` and `moh tokenizer`: shards hold end-of-text + the document's ids for each document in
// order, validation takes the last documents, the bytes do not depend on the thread count or the shard
// size, stdin is a document; encode/decode per line and --whole match the library and round trip;
// train makes a SentencePiece model that tokenize then uses (</s> between documents) and a
// character vocabulary;
// bad usage exits 2 and runtime failures exit 1 with the file named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "data/text/file_bytes.h"
#include "data/text/token_windows.h"
#include "tests/data/text/text_test_util.h"
#include "tests/test_util.h"
#include "tests/tools/cli_test_util.h"

namespace moh {
namespace {

namespace fs = std::filesystem;
using text::TokenId;

const std::vector<std::string> kDocuments = {
    "In the beginning God created the heaven and the earth.\n",
    "And the earth was without form, and void; <|endoftext|> and darkness was upon the face of the deep.\n",
    "日本語 emoji 👋🏽 and   spaces\t\ttabs\n\n",
    "The grace of our Lord Jesus Christ be with you all. Amen.\n",
};

class TextCli : public test::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    for (size_t k = 0; k < kDocuments.size(); ++k) write("corpus/0" + std::to_string(k) + ".txt", kDocuments[k]);
  }
  static std::string ranks() { return test::text_fixture("r50k_base.tiktoken.gz"); }
  static const text::Tokenizer& tokenizer() { return test::fixture_tokenizer("r50k_base"); }
  // EOT + ordinary ids of documents [first, last).
  static std::vector<TokenId> expected(size_t first, size_t last) {
    std::vector<TokenId> ids;
    for (size_t k = first; k < last; ++k) {
      ids.push_back(50256);
      const auto doc = tokenizer().encode_ordinary(kDocuments[k]);
      ids.insert(ids.end(), doc.begin(), doc.end());
    }
    return ids;
  }
  static std::vector<TokenId> tokens_of(const std::string& dir, const std::string& split) {
    std::vector<TokenId> out;
    const text::TokenCorpus corpus = text::TokenCorpus::from_dir(dir, split);
    for (const auto& shard : corpus.shards()) shard.copy(0, shard.size(), out);
    return out;
  }
  std::string tokenize(const std::string& out, const std::string& extra) {
    const test::Result r = test::moh(str_cat("tokenize --tokenizer ", ranks(), " --out ", path(out), " ", extra, " ",
                                                    path("corpus")), false);
    EXPECT_EQ(r.status, 0) << r.output;
    return r.output;
  }
};

TEST_F(TextCli, TokenizeWritesEndOfTextAndEachDocumentInOrder) {
  const std::string out = tokenize("shards", "--val-fraction 0.25");
  EXPECT_EQ(tokens_of(path("shards"), "train"), expected(0, 3));
  EXPECT_EQ(tokens_of(path("shards"), "val"), expected(3, 4));
  const auto summary = nlohmann::json::parse(out);
  EXPECT_EQ(summary.at("documents"), 4);
  EXPECT_EQ(summary.at("val_tokens"), expected(3, 4).size());
  const auto meta = nlohmann::json::parse(text::read_file_bytes(path("shards/meta.json")));
  EXPECT_EQ(meta.at("vocab_size"), 50257);
  EXPECT_EQ(meta.at("token_bytes"), 2);
  EXPECT_EQ(meta.at("val_documents"), 1);
}

TEST_F(TextCli, ShardsDoNotDependOnThreadsOrShardSize) {
  tokenize("one", "--threads 1");
  tokenize("three", "--threads 3 --shard-tokens 7");
  const auto three = text::TokenCorpus::from_dir(path("three"), "train");
  EXPECT_GT(three.shards().size(), 5u);
  for (const auto& shard : three.shards()) EXPECT_LE(shard.size(), 7);
  EXPECT_EQ(tokens_of(path("one"), "train"), expected(0, 4));
  EXPECT_EQ(tokens_of(path("three"), "train"), expected(0, 4));
}

TEST_F(TextCli, StdinIsOneDocument) {
  const test::Result r = test::moh(str_cat("tokenize --tokenizer ", ranks(), " --out ", path("stdin"), " - < ",
                                                  path("corpus/01.txt")));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(tokens_of(path("stdin"), "train"), expected(1, 2));
}

TEST_F(TextCli, TokenizeErrors) {
  const std::string t = " --tokenizer " + ranks();
  const std::vector<std::pair<std::string, std::string>> usage = {
      {"tokenize --out x " + path("corpus"), "missing --tokenizer"},
      {"tokenize" + t + " " + path("corpus"), "missing --out"},
      {"tokenize" + t + " --out " + path("o"), "no input documents"},
      {"tokenize" + t + " --out " + path("o") + " --val-fraction 1.5 " + path("corpus"), "--val-fraction must be in [0, 1)"},
      {"tokenize" + t + " --out " + path("o") + " --threads 0 " + path("corpus"), "--threads must be at least 1"},
      {"tokenize" + t + " --out " + path("o") + " --threads two " + path("corpus"), "--threads must be a number"},
      {"tokenize" + t + " --out " + path("o") + " --bogus " + path("corpus"), "unknown option '--bogus'"},
  };
  for (const auto& [args, message] : usage) {
    const test::Result r = test::moh(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
  }
  const std::vector<std::pair<std::string, std::string>> runtime = {
      {"tokenize" + t + " --out " + path("o") + " " + path("nope.txt"), "input '" + path("nope.txt") + "' does not exist"},
      {"tokenize --tokenizer " + path("corpus/00.txt") + " --out " + path("o") + " " + path("corpus"), "is not a tokenizer"},
      {"tokenize" + t + " --out " + path("o") + " --val-fraction 0.5 " + path("corpus/00.txt"), "at least 2 documents"},
  };
  for (const auto& [args, message] : runtime) {
    const test::Result r = test::moh(args);
    EXPECT_EQ(r.status, 1) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
  }
  tokenize("again", "");
  const test::Result r = test::moh("tokenize" + t + " --out " + path("again") + " " + path("corpus"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("already holds token shards"), std::string::npos) << r.output;
}

TEST_F(TextCli, EncodeAndDecodeLineByLineAndWhole) {
  const std::string text = "Hello world\nIn the <|endoftext|> beginning\n\n  spaced  \n";
  write("in.txt", text);
  const std::string t = " --tokenizer " + ranks();
  const test::Result lines = test::moh("tokenizer encode" + t + " < " + path("in.txt"), false);
  ASSERT_EQ(lines.status, 0);
  std::string expected_lines;
  for (const std::string line : {"Hello world", "In the <|endoftext|> beginning", "", "  spaced  "}) {
    std::string ids;
    for (TokenId id : tokenizer().encode_ordinary(line)) ids += (ids.empty() ? "" : " ") + std::to_string(id);
    expected_lines += ids + "\n";
  }
  EXPECT_EQ(lines.output, expected_lines);
  write("ids.txt", lines.output);
  EXPECT_EQ(test::moh("tokenizer decode" + t + " < " + path("ids.txt"), false).output, text);

  const test::Result whole = test::moh("tokenizer encode --whole --allow-special" + t + " < " + path("in.txt"), false);
  std::string ids;
  for (TokenId id : tokenizer().encode(text, text::AllowedSpecial::all())) ids += (ids.empty() ? "" : " ") + std::to_string(id);
  EXPECT_EQ(whole.output, ids + "\n");
  EXPECT_NE(whole.output.find(" 50256 "), std::string::npos);
  write("whole_ids.txt", whole.output);
  EXPECT_EQ(test::moh("tokenizer decode --whole" + t + " < " + path("whole_ids.txt"), false).output, text);

  write("bad_ids.txt", "1 2\n3 x4\n");
  const test::Result bad = test::moh("tokenizer decode" + t + " < " + path("bad_ids.txt"));
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.output.find("stdin line 2: 'x4' is not a token id"), std::string::npos) << bad.output;
  write("big_id.txt", "99999\n");
  EXPECT_NE(test::moh("tokenizer decode" + t + " < " + path("big_id.txt")).output.find("cannot decode id 99999"),
            std::string::npos);
  EXPECT_EQ(test::moh("tokenizer frobnicate" + t).status, 2);
  EXPECT_EQ(test::moh("tokenizer encode").status, 2);
  const test::Result info = test::moh("tokenizer info" + t, false);
  EXPECT_EQ(nlohmann::json::parse(info.output).at("vocab_size"), 50257);
}

TEST_F(TextCli, TrainsASentencePieceModelThatTokenizeUses) {
  std::string corpus;
  for (int k = 0; k < 30; ++k)
    for (const std::string& doc : kDocuments) corpus += doc;
  write("train/text.txt", corpus);
  const test::Result trained =
      test::moh("tokenizer train --vocab-size 400 --out " + path("sp.model") + " " + path("train"), false);
  ASSERT_EQ(trained.status, 0) << trained.output;
  EXPECT_EQ(nlohmann::json::parse(trained.output).at("vocab_size"), 400);
  const auto model = text::load_tokenizer(path("sp.model"));
  const test::Result r = test::moh(str_cat("tokenize --tokenizer ", path("sp.model"), " --out ", path("sp_shards"), " ",
                                                  path("corpus/00.txt")), false);
  ASSERT_EQ(r.status, 0) << r.output;
  std::vector<TokenId> expected{2};  // </s> separates documents
  const auto ids = model->encode_ordinary(kDocuments[0]);
  expected.insert(expected.end(), ids.begin(), ids.end());
  EXPECT_EQ(tokens_of(path("sp_shards"), "train"), expected);
  EXPECT_EQ(test::moh("tokenizer train --out " + path("x.model") + " " + path("train")).status, 2);
  EXPECT_EQ(test::moh("tokenizer train --vocab-size 300 --out " + path("x.model")).status, 2);
  const test::Result chars = test::moh("tokenizer train --kind char --out " + path("c.json") + " " + path("train"), false);
  ASSERT_EQ(chars.status, 0) << chars.output;
  const auto char_tokenizer = text::load_tokenizer(path("c.json"));
  EXPECT_EQ(char_tokenizer->decode(char_tokenizer->encode_ordinary(corpus)), corpus);
  EXPECT_EQ(test::moh("tokenizer train --kind words --out " + path("c.json") + " " + path("train")).status, 2);
  const test::Result bad = test::moh("tokenizer train --vocab-size 10 --out " + path("x.model") + " " + path("train"));
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.output.find("at least 260"), std::string::npos) << bad.output;
}

}  // namespace
}  // namespace moh
