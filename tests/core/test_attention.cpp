// Blocked attention (dense and packed queries) against a naive double-precision reference:
// forward, log-sum-exp and all three gradients, causal and not, across block boundaries, with
// strided views of a fused qkv tensor, plus the packed form's agreement with dense rows and errors.
#include <gtest/gtest.h>

#include <cmath>

#include "core/factory.h"
#include "core/ops.h"

namespace moh {
namespace {

struct Reference {
  std::vector<double> out, lse, dq, dk, dv;  // [B, H, T, *] contiguous
};

// Naive attention on [B, H, T, D] double copies; causal rule: key j visible to query i iff
// j <= i + (tk - tq).
Reference naive(const Tensor& qt, const Tensor& kt, const Tensor& vt, const Tensor& got, double scale, bool causal) {
  const int64_t B = qt.size(0), H = qt.size(1), tq = qt.size(2), tk = kt.size(2), d = qt.size(3), dv = vt.size(3);
  auto q = qt.to_vector<double>(), k = kt.to_vector<double>(), v = vt.to_vector<double>(), go = got.to_vector<double>();
  Reference r;
  r.out.assign(size_t(B * H * tq * dv), 0);
  r.lse.assign(size_t(B * H * tq), -INFINITY);
  r.dq.assign(q.size(), 0);
  r.dk.assign(k.size(), 0);
  r.dv.assign(v.size(), 0);
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const double* Q = &q[size_t(bh * tq * d)];
    const double* K = &k[size_t(bh * tk * d)];
    const double* V = &v[size_t(bh * tk * dv)];
    const double* GO = &go[size_t(bh * tq * dv)];
    for (int64_t i = 0; i < tq; ++i) {
      const int64_t limit = causal ? std::clamp<int64_t>(i + tk - tq + 1, 0, tk) : tk;
      if (limit == 0) continue;
      std::vector<double> p(static_cast<size_t>(limit));
      double mx = -INFINITY;
      for (int64_t j = 0; j < limit; ++j) {
        double s = 0;
        for (int64_t c = 0; c < d; ++c) s += Q[i * d + c] * K[j * d + c];
        p[size_t(j)] = s * scale;
        mx = std::max(mx, p[size_t(j)]);
      }
      double sum = 0;
      for (auto& x : p) sum += (x = std::exp(x - mx));
      for (auto& x : p) x /= sum;
      r.lse[size_t(bh * tq + i)] = mx + std::log(sum);
      std::vector<double> dp(static_cast<size_t>(limit));
      double dot = 0;
      for (int64_t j = 0; j < limit; ++j) {
        for (int64_t c = 0; c < dv; ++c) {
          r.out[size_t((bh * tq + i) * dv + c)] += p[size_t(j)] * V[j * dv + c];
          dp[size_t(j)] += GO[i * dv + c] * V[j * dv + c];
        }
        dot += p[size_t(j)] * dp[size_t(j)];
      }
      for (int64_t j = 0; j < limit; ++j) {
        const double ds = p[size_t(j)] * (dp[size_t(j)] - dot) * scale;
        for (int64_t c = 0; c < d; ++c) {
          r.dq[size_t((bh * tq + i) * d + c)] += ds * K[j * d + c];
          r.dk[size_t((bh * tk + j) * d + c)] += ds * Q[i * d + c];
        }
        for (int64_t c = 0; c < dv; ++c) r.dv[size_t((bh * tk + j) * dv + c)] += p[size_t(j)] * GO[i * dv + c];
      }
    }
  }
  return r;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " at " << i;
      continue;
    }
    double err = std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i]));
    if (err > worst) { worst = err; at = i; }
  }
  EXPECT_LE(worst, tol) << what << ": worst at " << at << " got " << got[at] << " want " << want[at];
}

struct Case {
  int64_t B, H, tq, tk, d, dv;
  bool causal;
  DType dtype;
};

class AttentionDense : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionDense, MatchesNaiveForwardAndBackward) {
  const Case c = GetParam();
  Generator gen(5);
  Tensor q = normal({c.B, c.H, c.tq, c.d}, 0, 1, gen, c.dtype);
  Tensor k = normal({c.B, c.H, c.tk, c.d}, 0, 1, gen, c.dtype);
  Tensor v = normal({c.B, c.H, c.tk, c.dv}, 0, 1, gen, c.dtype);
  Tensor go = normal({c.B, c.H, c.tq, c.dv}, 0, 1, gen, c.dtype);
  const double scale = 1.0 / std::sqrt(double(c.d));
  AttentionForward fwd = attention(q, k, v, scale, c.causal);
  AttentionBackward g = attention_backward(go, q, k, v, fwd, scale, c.causal);
  Reference r = naive(q, k, v, go, scale, c.causal);
  const double tol = c.dtype == DType::Float64 ? 1e-10 : 2e-5;
  EXPECT_EQ(fwd.out.shape(), (Shape{c.B, c.H, c.tq, c.dv}));
  EXPECT_TRUE(fwd.out.permute({0, 2, 1, 3}).is_contiguous());
  expect_close(fwd.out.to_vector<double>(), r.out, tol, "out");
  expect_close(fwd.lse.to_vector<double>(), r.lse, tol, "lse");
  expect_close(g.grad_q.to_vector<double>(), r.dq, tol, "grad_q");
  expect_close(g.grad_k.to_vector<double>(), r.dk, tol, "grad_k");
  expect_close(g.grad_v.to_vector<double>(), r.dv, tol, "grad_v");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionDense,
    ::testing::Values(Case{2, 3, 140, 140, 8, 8, false, DType::Float32},  // crosses the 128-row query block
                      Case{1, 2, 70, 150, 16, 4, false, DType::Float32},  // crosses the 128-key block, Dv != D
                      Case{2, 2, 130, 130, 8, 8, true, DType::Float32},   // causal, several blocks
                      Case{1, 1, 5, 140, 4, 4, true, DType::Float64},     // causal, Tq < Tk (decode-like)
                      Case{1, 2, 9, 4, 4, 3, true, DType::Float64},       // causal, Tq > Tk: early rows see no key
                      Case{1, 1, 1, 1, 4, 4, false, DType::Float64}));

TEST(Attention, ReadsStridedViewsOfAFusedQkvWithoutChangingResults) {
  const int64_t B = 2, T = 33, H = 3, D = 8;
  Generator gen(2);
  Tensor qkv = normal({B, T, 3, H, D}, 0, 1, gen);  // the fused projection's output layout
  Tensor q = qkv.select(2, 0).permute({0, 2, 1, 3});
  Tensor k = qkv.select(2, 1).permute({0, 2, 1, 3});
  Tensor v = qkv.select(2, 2).permute({0, 2, 1, 3});
  EXPECT_FALSE(q.is_contiguous());
  AttentionForward strided = attention(q, k, v, 0.3, true);
  AttentionForward packed = attention(q.contiguous(), k.contiguous(), v.contiguous(), 0.3, true);
  EXPECT_EQ(strided.out.to_vector<float>(), packed.out.to_vector<float>());
}

TEST(Attention, FiniteDifferencesConfirmTheReferenceGradient) {
  // Guards the test's own reference: d/dq of sum(out * go) by central differences in float64.
  Generator gen(8);
  Tensor q = normal({1, 1, 4, 3}, 0, 1, gen, DType::Float64), k = normal({1, 1, 5, 3}, 0, 1, gen, DType::Float64);
  Tensor v = normal({1, 1, 5, 2}, 0, 1, gen, DType::Float64), go = normal({1, 1, 4, 2}, 0, 1, gen, DType::Float64);
  AttentionBackward g = attention_backward(go, q, k, v, attention(q, k, v, 0.7, true), 0.7, true);
  auto objective = [&](const Tensor& qq) {
    auto o = attention(qq, k, v, 0.7, true).out.to_vector<double>();
    auto w = go.to_vector<double>();
    double s = 0;
    for (size_t i = 0; i < o.size(); ++i) s += o[i] * w[i];
    return s;
  };
  auto qv = q.to_vector<double>();
  auto gq = g.grad_q.to_vector<double>();
  for (size_t i = 0; i < qv.size(); ++i) {
    auto plus = qv, minus = qv;
    plus[i] += 1e-6;
    minus[i] -= 1e-6;
    double fd = (objective(from_vector(plus, q.shape())) - objective(from_vector(minus, q.shape()))) / 2e-6;
    EXPECT_NEAR(gq[i], fd, 1e-7) << i;
  }
}

TEST(AttentionPacked, SelectedRowsMatchDenseRowsAndGradients) {
  const int64_t B = 2, H = 3, T = 140, D = 8;  // the group that keeps every row crosses the 128-row query block
  for (bool causal : {false, true}) {
    Generator gen(21);
    Tensor q = normal({B, H, T, D}, 0, 1, gen, DType::Float64), k = normal({B, H, T, D}, 0, 1, gen, DType::Float64);
    Tensor v = normal({B, H, T, D}, 0, 1, gen, DType::Float64);
    Tensor go = normal({B, H, T, D}, 0, 1, gen, DType::Float64);
    // Each (b, h) keeps a pseudo-random subset of its rows (one group keeps none, one keeps all).
    // Packed groups are head-major; g below is the [B, H] index of the reference arrays.
    std::vector<int64_t> offsets{0}, pos, group_of_packed;
    std::vector<double> rows, grows;
    auto qv = q.to_vector<double>(), gov = go.to_vector<double>();
    std::vector<double> masked_go(gov.size(), 0.0);
    for (int64_t packed = 0; packed < B * H; ++packed) {
      const int64_t g = (packed % B) * H + packed / B;
      group_of_packed.push_back(g);
      for (int64_t t = 0; t < T; ++t) {
        bool keep = g == 1 ? false : g == 2 ? true : ((t * 7 + g * 3) % 5) < 2;
        if (!keep) continue;
        pos.push_back(t);
        for (int64_t c = 0; c < D; ++c) {
          rows.push_back(qv[size_t((g * T + t) * D + c)]);
          grows.push_back(gov[size_t((g * T + t) * D + c)]);
          masked_go[size_t((g * T + t) * D + c)] = gov[size_t((g * T + t) * D + c)];
        }
      }
      offsets.push_back(int64_t(pos.size()));
    }
    const int64_t R = int64_t(pos.size());
    Tensor q_rows = from_vector(rows, {R, D}), grad_rows = from_vector(grows, {R, D});
    Tensor off = from_vector(offsets, {B * H + 1}), qpos = from_vector(pos, {R});
    AttentionForward pf = attention_packed(q_rows, off, qpos, k, v, 0.35, causal);
    AttentionBackward pg = attention_packed_backward(grad_rows, q_rows, off, qpos, k, v, pf, 0.35, causal);
    Reference r = naive(q, k, v, from_vector(masked_go, go.shape()), 0.35, causal);
    // Gather the reference's rows in packed order.
    std::vector<double> want_out, want_dq, want_lse;
    for (int64_t packed = 0, i = 0; packed < B * H; ++packed)
      for (const int64_t g = group_of_packed[size_t(packed)]; i < offsets[size_t(packed + 1)]; ++i) {
        const int64_t t = pos[size_t(i)];
        want_lse.push_back(r.lse[size_t(g * T + t)]);
        for (int64_t c = 0; c < D; ++c) {
          want_out.push_back(r.out[size_t((g * T + t) * D + c)]);
          want_dq.push_back(r.dq[size_t((g * T + t) * D + c)]);
        }
      }
    expect_close(pf.out.to_vector<double>(), want_out, 1e-10, "packed out");
    expect_close(pf.lse.to_vector<double>(), want_lse, 1e-10, "packed lse");
    expect_close(pg.grad_q.to_vector<double>(), want_dq, 1e-10, "packed grad_q");
    expect_close(pg.grad_k.to_vector<double>(), r.dk, 1e-10, "packed grad_k");
    expect_close(pg.grad_v.to_vector<double>(), r.dv, 1e-10, "packed grad_v");
  }
}

TEST(Attention, RejectsBadShapesDtypesAndOffsets) {
  Tensor q = zeros({1, 2, 4, 8}), k = zeros({1, 2, 5, 8}), v = zeros({1, 2, 5, 3});
  EXPECT_NO_THROW(attention(q, k, v, 1.0, false));
  EXPECT_THROW(attention(zeros({2, 4, 8}), k, v, 1.0, false), Error);
  EXPECT_THROW(attention(zeros({1, 2, 4, 7}), k, v, 1.0, false), Error);
  EXPECT_THROW(attention(q, k, zeros({1, 2, 6, 3}), 1.0, false), Error);
  EXPECT_THROW(attention(q, k.to(DType::Float64), v, 1.0, false), Error);
  EXPECT_THROW(attention(q.to(DType::Int32), k.to(DType::Int32), v.to(DType::Int32), 1.0, false), Error);
  EXPECT_THROW(attention(q, zeros({1, 2, 0, 8}), zeros({1, 2, 0, 3}), 1.0, false), Error);
  const AttentionForward fwd = attention(q, k, v, 1.0, false);
  EXPECT_NO_THROW(attention_backward(zeros({1, 2, 4, 3}), q, k, v, fwd, 1.0, false));
  AttentionForward saved = fwd;
  saved.lse = saved.lse.to(DType::Float64);  // the backward reads lse in the forward's dtype
  EXPECT_THROW(attention_backward(zeros({1, 2, 4, 3}), q, k, v, saved, 1.0, false), Error);
  // A forward saved for other queries (Tq = 3) would be read past its end.
  const AttentionForward shorter = attention(zeros({1, 2, 3, 8}), k, v, 1.0, false);
  saved = fwd;
  saved.lse = shorter.lse;
  EXPECT_THROW(attention_backward(zeros({1, 2, 4, 3}), q, k, v, saved, 1.0, false), Error);
  saved = fwd;
  saved.out = zeros({1, 2, 4, 2});
  EXPECT_THROW(attention_backward(zeros({1, 2, 4, 2}), q, k, v, saved, 1.0, false), Error);
  Tensor rows = zeros({3, 8});
  Tensor pos = from_vector<int64_t>({0, 1, 2}, {3});
  EXPECT_NO_THROW(attention_packed(rows, from_vector<int64_t>({0, 1, 3}, {3}), pos, k, v, 1.0, true));
  EXPECT_THROW(attention_packed(rows, from_vector<int64_t>({0, 3}, {2}), pos, k, v, 1.0, true), Error);
  EXPECT_THROW(attention_packed(rows, from_vector<int64_t>({0, 2, 1}, {3}), pos, k, v, 1.0, true), Error);
  EXPECT_THROW(attention_packed(rows, from_vector<int64_t>({0, 1, 2}, {3}), pos, k, v, 1.0, true), Error);
  EXPECT_THROW(attention_packed(rows, from_vector<int64_t>({0, 1, 3}, {3}), pos.to(DType::Int32), k, v, 1.0, true),
               Error);
}

}  // namespace
}  // namespace moh
