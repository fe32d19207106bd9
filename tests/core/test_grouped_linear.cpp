// gather_linear / scatter_linear against naive loops (including rows shared between groups, empty
// groups and strided weight views), their backward kernels, and the input checks.
#include <gtest/gtest.h>

#include "core/factory.h"
#include "core/ops.h"

namespace moh {
namespace {

struct Routing {
  Tensor index, offsets;
  std::vector<int64_t> idx, off;
};

// Three groups over 7 tokens: group 1 is empty, tokens 2 and 5 appear in two groups.
Routing routing() {
  Routing r;
  r.idx = {0, 2, 5, 2, 3, 5, 6};
  r.off = {0, 3, 3, 7};
  r.index = from_vector(r.idx, {7});
  r.offsets = from_vector(r.off, {4});
  return r;
}

int64_t group_of(const Routing& r, int64_t row) {
  int64_t g = 0;
  while (r.off[size_t(g + 1)] <= row) ++g;
  return g;
}

TEST(GroupedLinear, GatherMatchesNaiveWithStridedWeightAndBias) {
  Generator gen(1);
  Routing r = routing();
  const int64_t N = 7, Din = 5, Dout = 4, G = 3;
  Tensor x = normal({N, Din}, 0, 1, gen, DType::Float64);
  // The weight is a slice of a larger fused matrix, viewed [G, Dout, Din].
  Tensor fused = normal({G * Dout + 3, Din}, 0, 1, gen, DType::Float64);
  Tensor w = fused.narrow(0, 3, G * Dout).view({G, Dout, Din});
  Tensor bias = normal({G, Dout}, 0, 1, gen, DType::Float64);
  Tensor out = gather_linear(x, r.index, r.offsets, w, bias);
  auto xv = x.to_vector<double>(), wv = w.contiguous().to_vector<double>(), bv = bias.to_vector<double>();
  auto ov = out.to_vector<double>();
  for (int64_t row = 0; row < 7; ++row) {
    const int64_t g = group_of(r, row), t = r.idx[size_t(row)];
    for (int64_t o = 0; o < Dout; ++o) {
      double want = bv[size_t(g * Dout + o)];
      for (int64_t i = 0; i < Din; ++i) want += xv[size_t(t * Din + i)] * wv[size_t((g * Dout + o) * Din + i)];
      EXPECT_NEAR(ov[size_t(row * Dout + o)], want, 1e-12) << row << "," << o;
    }
  }
  // Backward: grad_x accumulates over groups, grad_w per group, grad_bias per group.
  Tensor go = normal({7, Dout}, 0, 1, gen, DType::Float64);
  GroupedLinearBackward g = gather_linear_backward(go, x, r.index, r.offsets, w, true);
  auto gov = go.to_vector<double>();
  std::vector<double> gx(size_t(N * Din), 0), gw(size_t(G * Dout * Din), 0), gb(size_t(G * Dout), 0);
  for (int64_t row = 0; row < 7; ++row) {
    const int64_t grp = group_of(r, row), t = r.idx[size_t(row)];
    for (int64_t o = 0; o < Dout; ++o) {
      const double d = gov[size_t(row * Dout + o)];
      gb[size_t(grp * Dout + o)] += d;
      for (int64_t i = 0; i < Din; ++i) {
        gx[size_t(t * Din + i)] += d * wv[size_t((grp * Dout + o) * Din + i)];
        gw[size_t((grp * Dout + o) * Din + i)] += d * xv[size_t(t * Din + i)];
      }
    }
  }
  auto near = [](const std::vector<double>& a, const std::vector<double>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12) << i;
  };
  near(g.grad_input.to_vector<double>(), gx);
  near(g.grad_weight.to_vector<double>(), gw);
  near(g.grad_bias.to_vector<double>(), gb);
}

TEST(GroupedLinear, ScatterMatchesNaiveAndAccumulatesSharedRows) {
  Generator gen(2);
  Routing r = routing();
  const int64_t N = 7, Din = 3, Dout = 6, G = 3;
  Tensor src = normal({7, Din}, 0, 1, gen);
  // Output-projection layout: w [Dout, G * Din] column blocks viewed as [G, Dout, Din].
  Tensor wo = normal({Dout, G * Din}, 0, 1, gen);
  Tensor w = wo.view({Dout, G, Din}).permute({1, 0, 2});
  Tensor out = scatter_linear(src, r.index, r.offsets, w, N);
  auto sv = src.to_vector<double>(), wv = w.contiguous().to_vector<double>(), ov = out.to_vector<double>();
  std::vector<double> want(size_t(N * Dout), 0);
  for (int64_t row = 0; row < 7; ++row) {
    const int64_t g = group_of(r, row), t = r.idx[size_t(row)];
    for (int64_t o = 0; o < Dout; ++o)
      for (int64_t i = 0; i < Din; ++i)
        want[size_t(t * Dout + o)] += sv[size_t(row * Din + i)] * wv[size_t((g * Dout + o) * Din + i)];
  }
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(ov[i], want[i], 1e-5) << i;
  EXPECT_EQ(out.to_vector<float>()[1 * Dout], 0.0f);  // token 1 selected by no group

  Tensor go = normal({N, Dout}, 0, 1, gen);
  GroupedLinearBackward g = scatter_linear_backward(go, src, r.index, r.offsets, w);
  auto gov = go.to_vector<double>();
  auto gs = g.grad_input.to_vector<double>(), gw = g.grad_weight.to_vector<double>();
  std::vector<double> want_gw(size_t(G * Dout * Din), 0);
  for (int64_t row = 0; row < 7; ++row) {
    const int64_t grp = group_of(r, row), t = r.idx[size_t(row)];
    for (int64_t i = 0; i < Din; ++i) {
      double want_gs = 0;
      for (int64_t o = 0; o < Dout; ++o) {
        want_gs += gov[size_t(t * Dout + o)] * wv[size_t((grp * Dout + o) * Din + i)];
        want_gw[size_t((grp * Dout + o) * Din + i)] += gov[size_t(t * Dout + o)] * sv[size_t(row * Din + i)];
      }
      EXPECT_NEAR(gs[size_t(row * Din + i)], want_gs, 1e-5);
    }
  }
  for (size_t i = 0; i < want_gw.size(); ++i) EXPECT_NEAR(gw[i], want_gw[i], 1e-5) << i;
}

// The adds into rows shared between groups run column slices in parallel, each in group order, so
// every output and gradient has the same bits on 1 and 2 threads (sizes cross the register tiles and
// give the 2-thread run several column slices).
TEST(GroupedLinear, SameBitsOnOneAndTwoThreads) {
  Generator gen(3);
  const int64_t N = 45, Din = 70, Dout = 96, G = 5, K = 3;
  std::vector<int64_t> idx, off{0};
  for (int64_t g = 0; g < G; ++g) {
    for (int64_t t = 0; t < N; ++t)
      if ((t * 7 + g * 3) % G < K) idx.push_back(t);  // each token in K of the G groups
    off.push_back(int64_t(idx.size()));
  }
  const Tensor index = from_vector(idx, {int64_t(idx.size())}), offsets = from_vector(off, {G + 1});
  const int64_t R = index.numel();
  const Tensor x = normal({N, Din}, 0, 1, gen), wq = normal({G, Dout, Din}, 0, 1, gen);
  const Tensor wo = normal({Din, G * Dout}, 0, 1, gen).view({Din, G, Dout}).permute({1, 0, 2});
  const Tensor src = normal({R, Dout}, 0, 1, gen), g_rows = normal({R, Dout}, 0, 1, gen);
  const Tensor g_out = normal({N, Din}, 0, 1, gen);
  auto run = [&](int threads) {
    set_num_threads(threads);
    GroupedLinearBackward gb = gather_linear_backward(g_rows, x, index, offsets, wq, false);
    GroupedLinearBackward sb = scatter_linear_backward(g_out, src, index, offsets, wo);
    return std::vector<std::vector<float>>{
        gather_linear(x, index, offsets, wq, {}).to_vector<float>(), gb.grad_input.to_vector<float>(),
        gb.grad_weight.to_vector<float>(), scatter_linear(src, index, offsets, wo, N).to_vector<float>(),
        sb.grad_input.to_vector<float>(), sb.grad_weight.to_vector<float>()};
  };
  const int threads = num_threads();
  const auto one = run(1), two = run(2);
  set_num_threads(threads);
  for (size_t t = 0; t < one.size(); ++t) EXPECT_EQ(one[t], two[t]) << "output " << t;
}

// With every group's rows ascending, the adds into shared rows take the tokens in blocks that stay in
// cache; each row still receives the groups in order, so the result has the bits of the same rows in
// descending order (one block), and matches the naive sums. 3300 float64 tokens in 16-wide column
// slices cross three blocks.
TEST(GroupedLinear, RowBlocksGiveTheBitsOfOneBlock) {
  Generator gen(4);
  const int64_t N = 3300, D = 5, Dcols = 16, G = 4;
  std::vector<int64_t> ascending, descending, off{0};
  for (int64_t g = 0; g < G; ++g) {
    std::vector<int64_t> rows;
    for (int64_t t = 0; t < N; ++t)
      if ((t + g) % 4 != 0) rows.push_back(t);  // each token in 3 of the 4 groups
    ascending.insert(ascending.end(), rows.begin(), rows.end());
    descending.insert(descending.end(), rows.rbegin(), rows.rend());
    off.push_back(int64_t(ascending.size()));
  }
  const int64_t R = int64_t(ascending.size());
  // Row r of the descending order is row flip[r] of the ascending one.
  std::vector<int64_t> flip(static_cast<size_t>(R));
  for (int64_t g = 0; g < G; ++g)
    for (int64_t r = off[size_t(g)]; r < off[size_t(g + 1)]; ++r)
      flip[size_t(r)] = off[size_t(g)] + off[size_t(g + 1)] - 1 - r;
  const Tensor offsets = from_vector(off, {G + 1}), up = from_vector(ascending, {R}),
               down = from_vector(descending, {R}), to_down = from_vector(flip, {R});
  const Tensor src = normal({R, D}, 0, 1, gen, DType::Float64);
  const Tensor w_out = normal({G, Dcols, D}, 0, 1, gen, DType::Float64);  // scatter: [G, Dout, Din]
  const Tensor w_in = normal({G, D, Dcols}, 0, 1, gen, DType::Float64);   // gather: [G, Dout, Din]
  const Tensor x = normal({N, Dcols}, 0, 1, gen, DType::Float64);

  const Tensor out = scatter_linear(src, up, offsets, w_out, N);
  const Tensor src_down = index_select(src, 0, to_down);
  EXPECT_EQ(out.to_vector<double>(), scatter_linear(src_down, down, offsets, w_out, N).to_vector<double>());
  const Tensor grad_x = gather_linear_backward(src, x, up, offsets, w_in, false).grad_input;
  EXPECT_EQ(grad_x.to_vector<double>(),
            gather_linear_backward(src_down, x, down, offsets, w_in, false).grad_input.to_vector<double>());

  auto sv = src.to_vector<double>(), wo = w_out.to_vector<double>(), wi = w_in.to_vector<double>();
  std::vector<double> want_out(size_t(N * Dcols), 0), want_gx(size_t(N * Dcols), 0);
  for (int64_t g = 0; g < G; ++g)
    for (int64_t r = off[size_t(g)]; r < off[size_t(g + 1)]; ++r) {
      const int64_t t = ascending[size_t(r)];
      for (int64_t j = 0; j < Dcols; ++j)
        for (int64_t i = 0; i < D; ++i) {
          want_out[size_t(t * Dcols + j)] += sv[size_t(r * D + i)] * wo[size_t((g * Dcols + j) * D + i)];
          want_gx[size_t(t * Dcols + j)] += sv[size_t(r * D + i)] * wi[size_t((g * D + i) * Dcols + j)];
        }
    }
  auto ov = out.to_vector<double>(), gv = grad_x.to_vector<double>();
  for (size_t i = 0; i < want_out.size(); ++i) {
    ASSERT_NEAR(ov[i], want_out[i], 1e-12) << i;
    ASSERT_NEAR(gv[i], want_gx[i], 1e-12) << i;
  }
}

TEST(GroupedLinear, RejectsInconsistentGroupsAndIndices) {
  Routing r = routing();
  Tensor x = zeros({7, 5}), w = zeros({3, 4, 5});
  EXPECT_NO_THROW(gather_linear(x, r.index, r.offsets, w, Tensor()));
  EXPECT_THROW(gather_linear(x, r.index, from_vector<int64_t>({0, 3, 7}, {3}), w, Tensor()), Error);
  EXPECT_THROW(gather_linear(x, r.index, from_vector<int64_t>({0, 4, 3, 7}, {4}), w, Tensor()), Error);
  EXPECT_THROW(gather_linear(x, r.index, from_vector<int64_t>({0, 3, 3, 6}, {4}), w, Tensor()), Error);
  EXPECT_THROW(gather_linear(zeros({5, 5}), r.index, r.offsets, w, Tensor()), Error);  // index 5, 6 out of range
  EXPECT_THROW(gather_linear(x, r.index, r.offsets, zeros({3, 4, 6}), Tensor()), Error);
  EXPECT_THROW(gather_linear(x, r.index, r.offsets, w, zeros({3, 5})), Error);
  EXPECT_THROW(gather_linear(x, r.index.to(DType::Int32), r.offsets, w, Tensor()), Error);
  EXPECT_THROW(scatter_linear(zeros({6, 5}), r.index, r.offsets, w, 7), Error);
  EXPECT_THROW(scatter_linear(zeros({7, 5}), r.index, r.offsets, w, 6), Error);
}

}  // namespace
}  // namespace moh
