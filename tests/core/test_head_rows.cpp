// pack_head_rows (MoH's active (token, head) rows grouped by head, then batch, tokens ascending): hand
// values; random selections against the definition, walked group by group; the order of a token's ids
// not mattering; every head shared (K = 0); no tokens; and the input errors (an id out of range or
// repeated within a token, shapes, the head split, the batch). CUDA parity: tests/core/cuda.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/factory.h"
#include "core/ops.h"
#include "core/random.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using Ids = std::vector<int64_t>;

Tensor selection(const Ids& ids, int64_t k) { return from_vector(ids, {int64_t(ids.size()) / k, k}, DType::Int64); }

TEST(PackHeadRows, HandValues) {
  // B = 2, T = 3, H = 4, hs = 1 (head 0), E = 3 (heads 1-3), K = 2, five cached positions before.
  const HeadRows r = pack_head_rows(selection({0, 2, 1, 2, 0, 1, 2, 0, 0, 1, 1, 2}, 2), 2, 4, 1, 5);
  EXPECT_EQ(r.row_offsets.to_vector<int64_t>(), (Ids{0, 3, 6, 8, 10, 12, 14, 16, 18}));
  EXPECT_EQ(r.head_offsets.to_vector<int64_t>(), (Ids{0, 6, 10, 14, 18}));
  EXPECT_EQ(r.token_index.to_vector<int64_t>(), (Ids{0, 1, 2, 3, 4, 5, 0, 2, 3, 4, 1, 2, 4, 5, 0, 1, 3, 5}));
  EXPECT_EQ(r.q_pos.to_vector<int64_t>(), (Ids{5, 6, 7, 5, 6, 7, 5, 7, 5, 6, 6, 7, 6, 7, 5, 6, 5, 7}));
  EXPECT_EQ(r.pair_index.to_vector<int64_t>(), (Ids{0, 4, 8, 12, 16, 20, 1, 9, 13, 17, 6, 10, 18, 22, 3, 7, 15, 23}));
}

// The definition: for each head, each batch element, each token in order, a row when the token uses the head.
HeadRows reference(const Ids& sel, int64_t n, int64_t batch, int64_t heads, int64_t shared, int64_t first) {
  const int64_t k = n == 0 ? 0 : int64_t(sel.size()) / n, tokens = n / batch;
  Ids tok, pos, pair, row_off{0}, head_off{0};
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t t = 0; t < tokens; ++t) {
        const int64_t i = b * tokens + t;
        const bool uses = h < shared || std::count(sel.begin() + i * k, sel.begin() + (i + 1) * k, h - shared) > 0;
        if (!uses) continue;
        tok.push_back(i);
        pos.push_back(first + t);
        pair.push_back(i * heads + h);
      }
      row_off.push_back(int64_t(tok.size()));
    }
    head_off.push_back(int64_t(tok.size()));
  }
  auto t = [](const Ids& v) { return from_vector(v, {int64_t(v.size())}, DType::Int64); };
  return {t(tok), t(pos), t(pair), t(row_off), t(head_off)};
}

void expect_same_rows(const HeadRows& got, const HeadRows& want, const std::string& what) {
  EXPECT_EQ(got.token_index.to_vector<int64_t>(), want.token_index.to_vector<int64_t>()) << what;
  EXPECT_EQ(got.q_pos.to_vector<int64_t>(), want.q_pos.to_vector<int64_t>()) << what;
  EXPECT_EQ(got.pair_index.to_vector<int64_t>(), want.pair_index.to_vector<int64_t>()) << what;
  EXPECT_EQ(got.row_offsets.to_vector<int64_t>(), want.row_offsets.to_vector<int64_t>()) << what;
  EXPECT_EQ(got.head_offsets.to_vector<int64_t>(), want.head_offsets.to_vector<int64_t>()) << what;
}

TEST(PackHeadRows, RandomSelectionsMatchTheDefinitionInAnyIdOrder) {
  struct Case {
    int64_t batch, tokens, heads, shared, k;
  };
  Generator gen(7);
  for (const Case c : {Case{1, 9, 4, 0, 1}, Case{3, 5, 8, 2, 3}, Case{2, 17, 6, 1, 5}, Case{4, 1, 3, 2, 1}}) {
    const int64_t n = c.batch * c.tokens, e = c.heads - c.shared;
    const Tensor scores = uniform({n, e}, 0, 1, gen);
    const Tensor by_score = topk(scores, c.k).indices;  // by falling score
    Ids ids = by_score.to_vector<int64_t>();
    for (int64_t i = 0; i < n; ++i) std::sort(ids.begin() + i * c.k, ids.begin() + (i + 1) * c.k);
    const Tensor by_id = selection(ids, c.k);
    const std::string what = str_cat("batch ", c.batch, " tokens ", c.tokens, " heads ", c.heads, " shared ", c.shared,
                                     " k ", c.k);
    const HeadRows want = reference(ids, n, c.batch, c.heads, c.shared, 3);
    expect_same_rows(pack_head_rows(by_id, c.batch, c.heads, c.shared, 3), want, what);
    expect_same_rows(pack_head_rows(by_score, c.batch, c.heads, c.shared, 3), want, what + " (by score)");
    EXPECT_EQ(want.token_index.numel(), n * (c.shared + c.k)) << what;
  }
}

TEST(PackHeadRows, EveryHeadSharedAndNoTokens) {
  // K = 0: each head's groups hold every token of their batch element.
  const HeadRows all = pack_head_rows(Tensor::empty({4, 0}, DType::Int64), 2, 3, 3);
  expect_same_rows(all, reference({}, 4, 2, 3, 3, 0), "K = 0");
  EXPECT_EQ(all.row_offsets.to_vector<int64_t>(), (Ids{0, 2, 4, 6, 8, 10, 12}));
  EXPECT_EQ(all.token_index.to_vector<int64_t>(), (Ids{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  const HeadRows none = pack_head_rows(Tensor::empty({0, 2}, DType::Int64), 2, 4, 1);
  EXPECT_EQ(none.token_index.numel(), 0);
  EXPECT_EQ(none.row_offsets.to_vector<int64_t>(), Ids(9, 0));
  EXPECT_EQ(none.head_offsets.to_vector<int64_t>(), Ids(5, 0));
}

TEST(PackHeadRows, RejectsBadSelectionsAndShapes) {
  test::expect_error([&] { pack_head_rows(selection({0, 2, 1, 3, 0, 1}, 2), 1, 4, 1); },
                     {"pack_head_rows", "topk[1, 1] = 3", "out of range [0, 3)", "routed heads"});
  test::expect_error([&] { pack_head_rows(selection({0, 2, 1, 1, 0, -1}, 2), 1, 4, 1); },
                     {"pack_head_rows", "token 1 selects routed head 1 twice", "[1, 0] and [1, 1]"});
  test::expect_error([&] { pack_head_rows(selection({0, 1, 2}, 3).to(DType::Int32), 1, 4, 1); },
                     {"pack_head_rows", "int64 selection topk [N, K]"});
  test::expect_error([&] { pack_head_rows(from_vector(Ids{0, 1}, {2}, DType::Int64), 1, 4, 1); },
                     {"pack_head_rows", "topk [N, K]"});
  test::expect_error([&] { pack_head_rows(selection({0, 1, 2, 0}, 4), 1, 4, 1); },
                     {"pack_head_rows", "4 selected heads per token exceed the 3 routed heads"});
  test::expect_error([&] { pack_head_rows(Tensor::empty({2, 0}, DType::Int64), 1, 4, 1); },
                     {"pack_head_rows", "need every head shared, got 1 of 4"});
  test::expect_error([&] { pack_head_rows(selection({0, 1, 2}, 1), 2, 4, 1); },
                     {"pack_head_rows", "3 tokens do not split into a batch of 2"});
  test::expect_error([&] { pack_head_rows(selection({0, 1}, 1), 1, 4, 5); },
                     {"pack_head_rows", "shared heads 5 must be in [0, heads = 4]"});
  test::expect_error([&] { pack_head_rows(selection({0, 1}, 1), 1, 4, 1, -1); },
                     {"pack_head_rows", "first_position must be >= 0"});
}

}  // namespace
}  // namespace moh
