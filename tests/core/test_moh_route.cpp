// moh_route against the router composed from separate ops (softmax, topk, mask, clamp, cat: the formulas of
// layers/moh_routing.h), forward and backward, for every head split and with the clamp at eps active;
// ties; and the input checks. The generic checks (gradcheck, strided inputs, threads, CUDA parity) run
// from the op table (tests/core/op_table.cpp: moh_route).
#include <gtest/gtest.h>

#include <algorithm>

#include "autograd/autograd.h"
#include "core/factory.h"
#include "core/ops.h"
#include "tests/core/nn_test_util.h"

namespace moh {
namespace {

using ag::Variable;

struct Split {
  int64_t heads, shared, topk;
  int64_t routed() const { return heads - shared; }
  int64_t columns() const { return routed() + (shared > 1 ? shared : 0) + (shared > 0 ? 2 : 0); }
};

// The router from separate ops: gates and probs, plus the selection ids (ascending).
struct Composed {
  Variable gates, probs;
  std::vector<int64_t> ids;
};

Composed composed_router(const Variable& logits, const Split& s, double eps) {
  const int64_t n = logits.size(0), e = s.routed(), hl = s.shared > 1 ? s.shared : 0;
  Variable p = ag::softmax(ag::narrow(logits, 1, 0, e), 1);
  std::vector<int64_t> ids = topk(p.data(), s.topk).indices.to_vector<int64_t>();
  std::vector<double> mask(size_t(n * e), 0.0);
  for (int64_t t = 0; t < n; ++t) {
    std::sort(ids.begin() + t * s.topk, ids.begin() + (t + 1) * s.topk);
    for (int64_t j = 0; j < s.topk; ++j) mask[size_t(t * e + ids[size_t(t * s.topk + j)])] = 1.0;
  }
  Variable pm = ag::mul(p, Variable(from_vector(mask, {n, e}, logits.dtype())));
  Variable r = ag::mul(ag::div(pm, ag::clamp(ag::sum(pm, {1}, true), eps, std::nullopt)), double(s.topk));
  if (s.shared == 0) return {r, p, ids};
  Variable sh = hl > 0 ? ag::mul(ag::softmax(ag::narrow(logits, 1, e, hl), 1), double(s.shared))
                       : Variable(ones({n, 1}, logits.dtype()));
  Variable a = ag::mul(ag::softmax(ag::narrow(logits, 1, e + hl, 2), 1), 2.0);
  Variable gates = ag::cat({ag::mul(ag::narrow(a, 1, 0, 1), sh), ag::mul(ag::narrow(a, 1, 1, 1), r)}, 1);
  return {gates, p, ids};
}

void expect_matches_composed(const Split& s, double eps, double logit_scale) {
  const int64_t n = 9;
  const std::string what = "heads " + std::to_string(s.heads) + ", shared " + std::to_string(s.shared) + ", top " +
                           std::to_string(s.topk) + ", eps " + std::to_string(eps);
  SCOPED_TRACE(what);
  const Tensor x = mul(nn_test::randn({n, s.columns()}, DType::Float64, 3), logit_scale);
  const Tensor w_gates = nn_test::randn({n, s.heads}, DType::Float64, 4);
  const Tensor w_probs = nn_test::randn({n, s.routed()}, DType::Float64, 5);

  Variable fused_in(x, true), composed_in(x, true);
  const ag::Route fused = ag::moh_route(fused_in, s.heads, s.shared, s.topk, eps);
  const Composed ref = composed_router(composed_in, s, eps);
  nn_test::expect_close(fused.gates.data(), ref.gates.data(), 1e-13, "gates", 1e-15);
  nn_test::expect_close(fused.probs.data(), ref.probs.data(), 1e-13, "probs", 1e-15);
  EXPECT_EQ(fused.topk.to_vector<int64_t>(), ref.ids);
  const std::vector<double> mask = fused.mask.to_vector<double>();
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < s.routed(); ++i) {
      const bool selected = std::count(ref.ids.begin() + t * s.topk, ref.ids.begin() + (t + 1) * s.topk, i) > 0;
      EXPECT_EQ(mask[size_t(t * s.routed() + i)], selected ? 1.0 : 0.0) << "token " << t << ", head " << i;
    }

  auto loss = [&](const Variable& gates, const Variable& probs) {
    return ag::add(ag::sum(ag::mul(gates, Variable(w_gates))), ag::sum(ag::mul(probs, Variable(w_probs))));
  };
  ag::backward(ag::add(loss(fused.gates, fused.probs), loss(ref.gates, ref.probs)));  // one tape, two leaves
  nn_test::expect_close(fused_in.grad(), composed_in.grad(), 1e-11, "d logits", 1e-13);
}

TEST(MoHRoute, MatchesComposedRouterForEverySplit) {
  expect_matches_composed({8, 2, 4}, 1e-6, 1.0);   // shared gate, stage gate
  expect_matches_composed({6, 1, 2}, 1e-6, 1.0);   // one shared head: no shared-gate logits
  expect_matches_composed({6, 0, 3}, 1e-6, 1.0);   // no shared heads: gates = r
  expect_matches_composed({5, 3, 1}, 1e-6, 1.0);   // top 1
  expect_matches_composed({72, 4, 40}, 1e-6, 1.0);    // 68 routed heads
  expect_matches_composed({132, 4, 100}, 1e-6, 1.0);  // the widest: 128 routed heads
}

TEST(MoHRoute, ClampAtEpsBlocksTheGradientThroughTheSum) {
  // Top 1 of 6 with sharp logits: the selected probability is below eps = 0.95 for some tokens and
  // above for others, so both sides of the clamp are reached.
  expect_matches_composed({8, 2, 1}, 0.95, 0.5);
  expect_matches_composed({6, 0, 1}, 0.95, 4.0);
}

TEST(MoHRoute, TiesGoToTheLowerHeadAndIdsAscend) {
  // Router logits [1, 3, 3, 0, 3]: heads 1, 2, 4 tie; top 2 takes 1 and 2.
  const Tensor logits = from_vector(std::vector<double>{1, 3, 3, 0, 3}, {1, 5}, DType::Float64);
  const MoHRoute r = moh_route(logits, 5, 0, 2, 1e-6);
  EXPECT_EQ(r.topk.to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r.mask.to_vector<double>(), (std::vector<double>{0, 1, 1, 0, 0}));
  const std::vector<double> gates = r.gates.to_vector<double>();
  EXPECT_DOUBLE_EQ(gates[1], 1.0);  // two equal probabilities renormalised to K = 2 in all
  EXPECT_DOUBLE_EQ(gates[2], 1.0);
  EXPECT_EQ(gates[4], 0.0);
}

// The CPU routes tokens 8 at a time side by side (core/math/moh_route_math.h); a token's results must be
// the bits it gets routed alone, wherever it sits in a block (19 tokens: two full blocks and a short one).
void expect_tokens_route_as_alone(DType dtype) {
  SCOPED_TRACE(dtype_name(dtype));
  const int64_t n = 19, heads = 8, shared = 2, topk = 4, columns = 10;
  const Tensor logits = nn_test::randn({n, columns}, dtype, 6), grad_gates = nn_test::randn({n, heads}, dtype, 7),
               grad_probs = nn_test::randn({n, heads - shared}, dtype, 8);
  const MoHRoute all = moh_route(logits, heads, shared, topk, 1e-6);
  const Tensor grad_all = moh_route_backward(grad_gates, grad_probs, logits, heads, shared, topk, 1e-6);
  for (int64_t t = 0; t < n; ++t) {
    SCOPED_TRACE("token " + std::to_string(t));
    auto row = [t](const Tensor& x) { return x.narrow(0, t, 1).contiguous(); };
    const MoHRoute one = moh_route(row(logits), heads, shared, topk, 1e-6);
    EXPECT_EQ(row(all.gates).to_vector<double>(), one.gates.to_vector<double>());
    EXPECT_EQ(row(all.probs).to_vector<double>(), one.probs.to_vector<double>());
    EXPECT_EQ(row(all.mask).to_vector<double>(), one.mask.to_vector<double>());
    EXPECT_EQ(row(all.topk).to_vector<int64_t>(), one.topk.to_vector<int64_t>());
    EXPECT_EQ(row(grad_all).to_vector<double>(),
              moh_route_backward(row(grad_gates), row(grad_probs), row(logits), heads, shared, topk, 1e-6)
                  .to_vector<double>());
  }
}

TEST(MoHRoute, EachTokenRoutesAsItWouldAlone) {
  expect_tokens_route_as_alone(DType::Float32);
  expect_tokens_route_as_alone(DType::Float64);
}

TEST(MoHRoute, RejectsBadSplitsAndShapes) {
  const Tensor logits = zeros({4, 10}, DType::Float32);
  auto fails_with = [](auto&& f, const std::string& text) {
    try {
      f();
      ADD_FAILURE() << "expected an error containing '" << text << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  fails_with([&] { moh_route(logits, 8, 2, 7, 1e-6); }, "topk 7 must be in [1, 6]");
  fails_with([&] { moh_route(logits, 8, 8, 1, 1e-6); }, "shared heads 8 must be in [0, heads = 8)");
  fails_with([&] { moh_route(logits, 8, 1, 2, 1e-6); }, "expected logits [N, 9] (7 router + 2 stage columns)");
  fails_with([&] { moh_route(logits, 8, 2, 2, 0.0); }, "eps must be positive");
  fails_with([&] { moh_route(zeros({4, 10}, DType::Int64), 8, 2, 2, 1e-6); }, "expected logits to be float32");
  fails_with([&] { moh_route(zeros({2, 131}, DType::Float32), 130, 0, 2, 1e-6); }, "at most 128 routed and 128 shared");
  fails_with([&] { moh_route(zeros({2, 137}, DType::Float32), 135, 130, 2, 1e-6); }, "got 5 and 130");
  fails_with([&] { moh_route_backward(zeros({4, 7}), Tensor(), logits, 8, 2, 4, 1e-6); },
             "expected grad_gates [4, 8]");
}

}  // namespace
}  // namespace moh
