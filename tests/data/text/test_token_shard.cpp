// llm.c token shards: uint16 and uint32 round trips with the exact header bytes llm.c writes, a
// shard built byte by byte as llm.c's scripts lay it out, and every damaged file (truncated header or
// tokens, foreign magic, wrong version, count disagreeing with the size, tokens of the other width)
// rejected with an error naming the file and the problem.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "data/text/token_shard.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using text::TokenId;
using text::TokenWidth;

class TokenShardTest : public test::TempDirTest {
 protected:
  // A shard's bytes built by hand: header ints, then `payload`.
  static std::string shard_bytes(int32_t magic, int32_t version, int32_t count, const std::string& payload) {
    int32_t header[256] = {};
    header[0] = magic;
    header[1] = version;
    header[2] = count;
    return std::string(reinterpret_cast<const char*>(header), sizeof(header)) + payload;
  }
  template <class T>
  static std::string payload_of(const std::vector<T>& values) {
    return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  }
  static std::string read(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
};

TEST_F(TokenShardTest, RoundTripsBothWidthsWithLlmcHeaders) {
  const std::vector<TokenId> tokens = {0, 1, 50256, 65535, 7, 42};
  const std::vector<TokenId> wide = {0, 65536, 128255, 100257, 3};
  write_token_shard(path("a.bin"), tokens, TokenWidth::U16);
  write_token_shard(path("b.bin"), wide, TokenWidth::U32);
  const std::vector<uint16_t> narrow(tokens.begin(), tokens.end());
  EXPECT_EQ(read(path("a.bin")), shard_bytes(20240520, 1, 6, payload_of(narrow)));
  const std::vector<uint32_t> wide32(wide.begin(), wide.end());
  EXPECT_EQ(read(path("b.bin")), shard_bytes(20240801, 7, 5, payload_of(wide32)));

  const text::TokenShard a(path("a.bin")), b(path("b.bin"));
  EXPECT_EQ(a.width(), TokenWidth::U16);
  EXPECT_EQ(b.width(), TokenWidth::U32);
  std::vector<TokenId> back;
  a.copy(0, a.size(), back);
  EXPECT_EQ(back, tokens);
  back.clear();
  b.copy(1, 3, back);
  EXPECT_EQ(back, (std::vector<TokenId>{65536, 128255, 100257}));
  test::expect_error([&] { b.copy(3, 3, back); }, {"b.bin", "tokens [3, 6) are outside its 5 tokens"});
  EXPECT_FALSE(std::filesystem::exists(path("a.bin.tmp")));
}

TEST_F(TokenShardTest, ReadsAShardLaidOutByHandAndAnEmptyOne) {
  write("hand.bin", shard_bytes(20240520, 1, 3, payload_of(std::vector<uint16_t>{9, 8, 7})));
  const text::TokenShard s(path("hand.bin"));
  ASSERT_EQ(s.size(), 3);
  EXPECT_EQ(s[0], 9);
  EXPECT_EQ(s[2], 7);
  write_token_shard(path("empty.bin"), {}, TokenWidth::U32);
  EXPECT_EQ(text::TokenShard(path("empty.bin")).size(), 0);
}

TEST_F(TokenShardTest, WriterRefusesTokensThatDoNotFit) {
  test::expect_error([&] { write_token_shard(path("w.bin"), std::vector<TokenId>{1, 65536}, TokenWidth::U16); },
                     {"w.bin", "token 1 is 65536", "uint16"});
  test::expect_error([&] { write_token_shard(path("w.bin"), std::vector<TokenId>{-3}, TokenWidth::U32); },
                     {"w.bin", "token 0 is -3"});
  EXPECT_FALSE(std::filesystem::exists(path("w.bin")));
  EXPECT_EQ(text::token_width_for(50257), TokenWidth::U16);
  EXPECT_EQ(text::token_width_for(65536), TokenWidth::U16);
  EXPECT_EQ(text::token_width_for(65537), TokenWidth::U32);
}

TEST_F(TokenShardTest, DamagedShardsAreErrorsNamingTheFile) {
  const std::string u16 = payload_of(std::vector<uint16_t>{1, 2, 3, 4});
  const std::string u32 = payload_of(std::vector<uint32_t>{1, 2, 3, 4});
  const std::string good = shard_bytes(20240520, 1, 4, u16);
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {good.substr(0, 700), {"is truncated: 700 bytes", "1024-byte header"}},
      {good.substr(0, good.size() - 1), {"4 uint16 tokens (8 bytes) but 7 bytes follow", "truncated"}},
      {shard_bytes(12345, 1, 4, u16), {"not an llm.c token shard: magic 12345", "20240520", "20240801"}},
      {shard_bytes(20240520, 7, 4, u16), {"version 7", "magic 20240520 (uint16 tokens) goes with version 1"}},
      {shard_bytes(20240801, 1, 4, u32), {"version 1", "goes with version 7"}},
      {shard_bytes(20240520, 1, 9, u16), {"9 uint16 tokens (18 bytes) but 8 bytes follow"}},
      {shard_bytes(20240520, 1, 3, u16), {"3 uint16 tokens (6 bytes) but 8 bytes follow", "count is wrong"}},
      {shard_bytes(20240520, 1, 4, u32), {"16 bytes follow", "size of 4 uint32 tokens", "wrong width"}},
      {shard_bytes(20240801, 1 + 6, 4, u16), {"size of 4 uint16 tokens", "wrong width"}},
      {shard_bytes(20240520, 1, -2, u16), {"negative token count -2"}},
      {"", {"is truncated: 0 bytes"}},
  };
  for (size_t k = 0; k < cases.size(); ++k) {
    const std::string file = write("bad" + std::to_string(k) + ".bin", cases[k].first);
    std::vector<std::string> parts = cases[k].second;
    parts.push_back(file);
    test::expect_error([&] { text::TokenShard s(file); }, parts);
  }
  test::expect_error([&] { text::TokenShard s(path("none.bin")); }, {"none.bin", "cannot open"});
  test::expect_error([&] { text::TokenShard s(dir_.string()); }, {"not a regular file"});
}

}  // namespace
}  // namespace moh
