// Windows over token shards: random windows are real seq_len + 1 slices of one shard, cover the
// shards in proportion, repeat for a seed and differ across seeds, split a draw across ranks like one
// process, and resume from a checkpointed state on another world size; sequential validation windows
// tile each shard in order and interleave across ranks.
#include <gtest/gtest.h>

#include <set>

#include "data/text/token_windows.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using text::TokenId;

constexpr TokenId kShardStride = 100000;

class TokenWindowsTest : public test::TempDirTest {
 protected:
  // Shard s holds tokens s * kShardStride + i, so a token tells where it came from.
  text::TokenCorpus corpus(const std::vector<int64_t>& sizes) {
    std::vector<std::string> paths;
    for (size_t s = 0; s < sizes.size(); ++s) {
      std::vector<TokenId> tokens(static_cast<size_t>(sizes[s]));
      for (int64_t i = 0; i < sizes[s]; ++i) tokens[size_t(i)] = TokenId(int64_t(s) * kShardStride + i);
      paths.push_back(path("train_" + std::to_string(s) + ".bin"));
      write_token_shard(paths.back(), tokens, text::TokenWidth::U32);
    }
    return text::TokenCorpus(paths);
  }
  static std::vector<TokenId> draw(text::RandomTokenWindows& w, int64_t count) {
    std::vector<TokenId> out;
    w.next(count, out);
    return out;
  }
};

TEST_F(TokenWindowsTest, RandomWindowsAreSlicesOfOneShardInProportion) {
  const text::TokenCorpus c = corpus({1000, 5, 3000});  // the middle one is shorter than a window
  const int64_t seq = 16;
  text::RandomTokenWindows windows(c, seq, 1, "test");
  const std::vector<TokenId> out = draw(windows, 4000);
  ASSERT_EQ(out.size(), size_t(4000 * (seq + 1)));
  std::vector<int64_t> per_shard(3);
  for (size_t w = 0; w < 4000; ++w) {
    const TokenId first = out[w * (seq + 1)];
    for (int64_t k = 1; k <= seq; ++k) ASSERT_EQ(out[w * (seq + 1) + size_t(k)], first + k) << "window " << w;
    ++per_shard[size_t(first / kShardStride)];
    ASSERT_LT(first % kShardStride + seq, first / kShardStride == 0 ? 1000 : 3000);
  }
  EXPECT_EQ(per_shard[1], 0);
  // Starts per shard: 984 and 2984, so about a quarter of the windows come from shard 0.
  EXPECT_NEAR(double(per_shard[0]) / 4000, 984.0 / 3968, 0.03);
  EXPECT_EQ(windows.index(), 4000);
}

TEST_F(TokenWindowsTest, RepeatForASeedAndDifferAcrossSeeds) {
  const text::TokenCorpus c = corpus({500, 700});
  text::RandomTokenWindows a(c, 8, 3, "a"), b(c, 8, 3, "b"), other(c, 8, 4, "other");
  const std::vector<TokenId> first = draw(a, 50);
  EXPECT_EQ(first, draw(b, 50));
  EXPECT_NE(first, draw(other, 50));
  EXPECT_NE(first, draw(a, 50));  // the next draw moves on
}

TEST_F(TokenWindowsTest, RanksSplitEachDrawAndResumeOnAnotherWorldSize) {
  const text::TokenCorpus c = corpus({400, 900, 300});
  const int64_t seq = 5, global = 12;
  text::RandomTokenWindows single(c, seq, 9, "single");
  std::vector<TokenId> expected;
  for (int step = 0; step < 6; ++step) single.next(global, expected);

  // Steps 0..2 on 4 ranks (3 windows each), then steps 3..5 on 2 ranks (6 each) from rank 0's state.
  std::vector<TokenId> got;
  std::map<std::string, int64_t> state;
  {
    std::vector<text::RandomTokenWindows> ranks;
    for (int64_t r = 0; r < 4; ++r) ranks.emplace_back(c, seq, 9, "rank", SamplerShard{r, 4});
    for (int step = 0; step < 3; ++step)
      for (auto& rank : ranks) rank.next(global / 4, got);
    state = ranks[0].state();
    for (auto& rank : ranks) EXPECT_EQ(rank.state(), state);
  }
  std::vector<text::RandomTokenWindows> ranks;
  for (int64_t r = 0; r < 2; ++r) {
    ranks.emplace_back(c, seq, 9, "rank", SamplerShard{r, 2});
    ranks.back().load_state(state);
  }
  for (int step = 3; step < 6; ++step)
    for (auto& rank : ranks) rank.next(global / 2, got);
  EXPECT_EQ(got, expected);

  text::RandomTokenWindows wrong_seed(c, seq, 10, "llm train");
  test::expect_error([&] { wrong_seed.load_state(state); }, {"llm train", "seed 9", "uses 10"});
  test::expect_error([&] { wrong_seed.load_state({}); }, {"llm train", "no 'index'"});
}

TEST_F(TokenWindowsTest, RejectsCorporaWithoutAWindow) {
  const text::TokenCorpus c = corpus({4, 6});
  test::expect_error([&] { text::RandomTokenWindows w(c, 6, 0, "tiny"); },
                     {"tiny", "no shard holds a window of seq_len + 1 = 7 tokens", "largest has 6"});
  EXPECT_NO_THROW(text::RandomTokenWindows(c, 5, 0, "tiny"));
}

TEST_F(TokenWindowsTest, SequentialWindowsTileShardsAndInterleaveAcrossRanks) {
  const text::TokenCorpus c = corpus({21, 3, 11});
  const int64_t seq = 5;
  text::SequentialTokenWindows all(c, seq, "val", SamplerShard{0, 1});
  EXPECT_EQ(all.window_count(), 4 + 0 + 2);
  std::vector<TokenId> firsts;
  std::vector<TokenId> out;
  while (all.next(out)) firsts.push_back(out[out.size() - size_t(seq + 1)]);
  EXPECT_EQ(firsts, (std::vector<TokenId>{0, 5, 10, 15, 2 * kShardStride, 2 * kShardStride + 5}));
  EXPECT_EQ(out.back(), 2 * kShardStride + 10);  // the last window ends on the shard's last token
  all.reset();
  std::vector<TokenId> again;
  while (all.next(again)) {
  }
  EXPECT_EQ(again, out);

  std::vector<TokenId> rank0, rank1;
  text::SequentialTokenWindows r0(c, seq, "val", SamplerShard{0, 2}), r1(c, seq, "val", SamplerShard{1, 2});
  std::vector<TokenId> merged;
  while (true) {
    const bool a = r0.next(merged), b = r1.next(merged);
    if (!a && !b) break;
  }
  EXPECT_EQ(merged, out);
}

TEST_F(TokenWindowsTest, FindsShardsInAFolderByLlmcNames) {
  corpus({10, 10});
  write_token_shard(path("tinyshakespeare_train_000002.bin"), std::vector<TokenId>{1, 2}, text::TokenWidth::U16);
  write_token_shard(path("val_000000.bin"), std::vector<TokenId>{1, 2}, text::TokenWidth::U16);
  write("train_notes.txt", "not a shard");
  const text::TokenCorpus train = text::TokenCorpus::from_dir(dir_.string(), "train");
  ASSERT_EQ(train.shards().size(), 3u);
  EXPECT_NE(train.shards()[0].path().find("tinyshakespeare_train_000002.bin"), std::string::npos);
  EXPECT_EQ(train.tokens(), 22);
  EXPECT_EQ(text::TokenCorpus::from_dir(dir_.string(), "val").tokens(), 2);
  test::expect_error([&] { text::TokenCorpus::from_dir(dir_.string(), "test"); }, {"no test shards in", dir_.string()});
}

}  // namespace
}  // namespace moh
