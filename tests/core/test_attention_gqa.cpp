// Grouped-query attention in the attention ops (k, v with Hkv heads, each read by H / Hkv query
// heads): the same op on K/V repeated to H heads (LLaMA/HF repeat_kv order) is the reference. The
// forward and grad_q run the same arithmetic on other pointers, so they must match bitwise;
// grad_k / grad_v must be the group sums of the repeated call's (summed in another order, so to
// rounding), and the same bits for any thread count. Plus the shape errors.
#include <gtest/gtest.h>

#include <cmath>

#include "core/factory.h"
#include "core/ops.h"

namespace moh {
namespace {

// [B, Hkv, T, C] -> [B, Hkv * group, T, C]: K/V head j serves query heads [j * group, (j + 1) * group).
Tensor repeat_kv(const Tensor& t, int64_t group) {
  const Shape s = t.shape();
  return t.unsqueeze(2).expand({s[0], s[1], group, s[2], s[3]}).reshape({s[0], s[1] * group, s[2], s[3]});
}

// [B, Hkv * group, T, C] -> [B, Hkv, T, C] in double: each K/V head's sum over its query heads.
std::vector<double> group_sum(const Tensor& t, int64_t group) {
  const int64_t B = t.size(0), H = t.size(1), rest = t.size(2) * t.size(3);
  const std::vector<double> v = t.contiguous().to_vector<double>();
  std::vector<double> out(size_t(B * (H / group) * rest), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < rest; ++i)
        out[size_t((b * (H / group) + h / group) * rest + i)] += v[size_t((b * H + h) * rest + i)];
  return out;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i]));
    if (err > worst) worst = err, at = i;
  }
  EXPECT_LE(worst, tol) << what << ": worst at " << at << " got " << got[at] << " want " << want[at];
}

template <class T>
void expect_bitwise(const Tensor& got, const Tensor& want, const char* what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(got.contiguous().to_vector<T>(), want.contiguous().to_vector<T>()) << what;
}

struct GqaCase {
  int64_t B, H, Hkv, tq, tk, d;
  bool causal;
  DType dtype;
};

class AttentionGqaDense : public ::testing::TestWithParam<GqaCase> {};

TEST_P(AttentionGqaDense, EqualsTheOpOnRepeatedKeysValues) {
  const GqaCase c = GetParam();
  const int64_t group = c.H / c.Hkv;
  Generator gen(31);
  Tensor q = normal({c.B, c.H, c.tq, c.d}, 0, 1, gen, c.dtype);
  Tensor k = normal({c.B, c.Hkv, c.tk, c.d}, 0, 1, gen, c.dtype);
  Tensor v = normal({c.B, c.Hkv, c.tk, c.d + 1}, 0, 1, gen, c.dtype);
  Tensor go = normal({c.B, c.H, c.tq, c.d + 1}, 0, 1, gen, c.dtype);
  Tensor k_rep = repeat_kv(k, group), v_rep = repeat_kv(v, group);
  const double scale = 1.0 / std::sqrt(double(c.d));

  AttentionForward fwd = attention(q, k, v, scale, c.causal), ref = attention(q, k_rep, v_rep, scale, c.causal);
  AttentionBackward g = attention_backward(go, q, k, v, fwd, scale, c.causal);
  AttentionBackward rg = attention_backward(go, q, k_rep, v_rep, ref, scale, c.causal);
  EXPECT_EQ(g.grad_k.shape(), k.shape());
  EXPECT_EQ(g.grad_v.shape(), v.shape());
  const double tol = c.dtype == DType::Float64 ? 1e-12 : 1e-6;
  if (c.dtype == DType::Float32) {
    expect_bitwise<float>(fwd.out, ref.out, "out");
    expect_bitwise<float>(fwd.lse, ref.lse, "lse");
    expect_bitwise<float>(g.grad_q, rg.grad_q, "grad_q");
  } else {
    expect_close(fwd.out.to_vector<double>(), ref.out.to_vector<double>(), tol, "out");
    expect_close(g.grad_q.to_vector<double>(), rg.grad_q.to_vector<double>(), tol, "grad_q");
  }
  expect_close(g.grad_k.contiguous().to_vector<double>(), group_sum(rg.grad_k, group), tol, "grad_k");
  expect_close(g.grad_v.contiguous().to_vector<double>(), group_sum(rg.grad_v, group), tol, "grad_v");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionGqaDense,
    ::testing::Values(GqaCase{2, 6, 2, 140, 150, 8, false, DType::Float32},  // group 3, across q and k blocks
                      GqaCase{2, 4, 2, 130, 130, 8, true, DType::Float32},  // causal, several blocks
                      GqaCase{1, 4, 1, 9, 20, 4, true, DType::Float64},     // multi-query (Hkv 1), Tq < Tk
                      GqaCase{1, 6, 3, 9, 4, 4, true, DType::Float64}));    // Tq > Tk: early rows see no key

TEST(AttentionGqa, BackwardIsTheSameForAnyThreadCount) {
  Generator gen(32);
  const int64_t B = 2, H = 8, Hkv = 2, T = 140, D = 8;
  Tensor q = normal({B, H, T, D}, 0, 1, gen), k = normal({B, Hkv, T, D}, 0, 1, gen);
  Tensor v = normal({B, Hkv, T, D}, 0, 1, gen), go = normal({B, H, T, D}, 0, 1, gen);
  const int threads = num_threads();
  std::vector<std::vector<float>> grad_k, grad_v;
  for (int n : {1, 2, 3}) {
    set_num_threads(n);
    AttentionBackward g = attention_backward(go, q, k, v, attention(q, k, v, 0.3, true), 0.3, true);
    grad_k.push_back(g.grad_k.contiguous().to_vector<float>());
    grad_v.push_back(g.grad_v.contiguous().to_vector<float>());
  }
  set_num_threads(threads);
  for (size_t i = 1; i < grad_k.size(); ++i) {
    EXPECT_EQ(grad_k[i], grad_k[0]) << "grad_k with " << i + 1 << " threads";
    EXPECT_EQ(grad_v[i], grad_v[0]) << "grad_v with " << i + 1 << " threads";
  }
}

TEST(AttentionGqa, PackedRowsEqualTheOpOnRepeatedKeysValues) {
  const int64_t B = 2, H = 6, Hkv = 2, group = H / Hkv, T = 140, D = 8;  // group 2's rows cross a query block
  for (bool causal : {false, true}) {
    Generator gen(33);
    Tensor k = normal({B, Hkv, T, D}, 0, 1, gen), v = normal({B, Hkv, T, D}, 0, 1, gen);
    // Group g = h * B + b keeps a pseudo-random subset of the positions (group 1 none, group 2 all).
    std::vector<int64_t> offsets{0}, pos;
    for (int64_t g = 0; g < H * B; ++g) {
      for (int64_t t = 0; t < T; ++t)
        if (g == 2 || (g != 1 && (t * 7 + g * 3) % 5 < 2)) pos.push_back(t);
      offsets.push_back(int64_t(pos.size()));
    }
    const int64_t R = int64_t(pos.size());
    Tensor rows = normal({R, D}, 0, 1, gen), grad_rows = normal({R, D}, 0, 1, gen);
    Tensor off = from_vector(offsets, {H * B + 1}), q_pos = from_vector(pos, {R});
    Tensor k_rep = repeat_kv(k, group), v_rep = repeat_kv(v, group);

    AttentionForward fwd = attention_packed(rows, off, q_pos, k, v, 0.35, causal, H);
    AttentionForward ref = attention_packed(rows, off, q_pos, k_rep, v_rep, 0.35, causal);
    AttentionBackward g = attention_packed_backward(grad_rows, rows, off, q_pos, k, v, fwd, 0.35, causal, H);
    AttentionBackward rg = attention_packed_backward(grad_rows, rows, off, q_pos, k_rep, v_rep, ref, 0.35, causal);
    expect_bitwise<float>(fwd.out, ref.out, "packed out");
    expect_bitwise<float>(fwd.lse, ref.lse, "packed lse");
    expect_bitwise<float>(g.grad_q, rg.grad_q, "packed grad_q");
    EXPECT_EQ(g.grad_k.shape(), k.shape());
    expect_close(g.grad_k.contiguous().to_vector<double>(), group_sum(rg.grad_k, group), 1e-6, "packed grad_k");
    expect_close(g.grad_v.contiguous().to_vector<double>(), group_sum(rg.grad_v, group), 1e-6, "packed grad_v");
  }
}

// Runs fn, expecting an Error whose message holds every one of `parts`.
template <class F>
void expect_error(F&& fn, std::initializer_list<const char*> parts) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    for (const char* part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(AttentionGqa, RejectsKeyValueHeadsThatDoNotDivideTheQueryHeads) {
  Tensor q = zeros({1, 6, 4, 8}), k = zeros({1, 4, 5, 8}), v = zeros({1, 4, 5, 8});
  expect_error([&] { attention(q, k, v, 1.0, false); }, {"attention: the 4 key/value heads", "[1, 4, 5, 8]",
                                                           "must divide the 6 query heads"});
  const AttentionForward fwd = attention(zeros({1, 4, 4, 8}), k, v, 1.0, false);
  expect_error([&] { attention_backward(zeros({1, 6, 4, 8}), q, k, v, fwd, 1.0, false); },
               {"attention_backward", "must divide the 6 query heads"});
  Tensor rows = zeros({3, 8}), pos = from_vector<int64_t>({0, 1, 2}, {3});
  Tensor off7 = from_vector<int64_t>({0, 1, 1, 2, 2, 3, 3}, {7});  // H * B + 1 for H = 6, B = 1
  expect_error([&] { attention_packed(rows, off7, pos, k, v, 1.0, true, 6); },
               {"attention_packed: the 4 key/value heads", "must divide the 6 query heads"});
  Tensor k2 = zeros({1, 2, 5, 8});
  EXPECT_NO_THROW(attention_packed(rows, off7, pos, k2, k2, 1.0, true, 6));
  // row_offsets sized for one query head per K/V head, with 6 query heads declared.
  expect_error([&] { attention_packed(rows, from_vector<int64_t>({0, 1, 3}, {3}), pos, k2, k2, 1.0, true, 6); },
               {"attention_packed", "[H*B + 1] = [7]", "H = 6 query heads"});
  expect_error([&] { attention_packed(rows, off7, pos, k2, k2, 1.0, true, -2); },
               {"attention_packed", "must divide the -2 query heads"});
}

}  // namespace
}  // namespace moh
