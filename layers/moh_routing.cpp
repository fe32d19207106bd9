// MoH routing math on the tape (see moh_routing.h for the formulas).
#include "layers/moh_routing.h"

#include <algorithm>
#include <cmath>

#include "autograd/autograd.h"
#include "core/factory.h"
#include "core/ops.h"

namespace moh {
namespace {

// The one-hot mask [N, E] (p's dtype) of each row's K highest scores of p [N, E], whose ids (by falling
// score) are set as out.topk; on p's device, nothing read back.
Tensor select_topk(const Tensor& p, int64_t k, Routing& out) {
  out.topk = moh::topk(p, k).indices;
  return sum(one_hot(out.topk, p.size(1), p.dtype()), {1});
}

// Forward value: the binary mask; gradient: passed straight through to `soft` where the mask is
// 1. Unselected heads get none, so the dense and the sparse execution (which never computes an
// unselected head's output) train identically.
ag::Variable straight_through(const Tensor& mask, const ag::Variable& soft) {
  return ag::record("straight_through", mask, {soft},
                    [mask](const Tensor& g, const ag::Needs&) { return std::vector<Tensor>{mul(g, mask)}; });
}

}  // namespace

Routing learned_routing(const ag::Variable& logits, const HeadSplit& split, bool training, double eps,
                        const BalanceReducer& reduce_load) {
  Routing out;
  if (split.topk == 0) {
    if (logits.defined()) out.gates = ag::mul(ag::softmax(logits, 1), double(split.heads));
    return out;
  }
  // The fused router (core/ops.h: moh_route): softmaxes, top-k, renormalisation and gates in one pass over the
  // tokens.
  ag::Route route = ag::moh_route(logits, split.heads, split.shared, split.topk, eps);
  out.gates = route.gates;
  out.probs = route.probs.data();
  out.topk = route.topk;
  if (training) {
    Tensor load = mean(route.mask, {0});
    if (reduce_load) reduce_load(load);
    out.balance_loss =
        ag::mul(ag::sum(ag::mul(ag::mean(route.probs, {0}), ag::Variable(load))), double(split.routed()));
  }
  return out;
}

Routing query_norm_routing(const ag::Variable& q, const HeadSplit& split, double eps) {
  const int64_t n = q.size(0), hs = split.shared, e = split.routed();
  Routing out;
  if (split.topk == 0) return out;  // every head shared, every gate 1
  ag::Variable norms = ag::sqrt(ag::sum(ag::mul(q, q), {2}));  // [N, H]
  ag::Variable routed = ag::narrow(norms, 1, hs, e);
  ag::Variable spread = ag::add(ag::sqrt(ag::variance(routed, {1}, 0, true)), eps);
  ag::Variable score = ag::softmax(ag::div(routed, spread), 1);  // [N, E]
  const Tensor mask = select_topk(score.data(), split.topk, out);
  out.probs = score.data();
  ag::Variable routed_gates = straight_through(mask, score);
  out.gates = hs == 0 ? routed_gates : ag::cat({ag::Variable(ones({n, hs}, q.dtype(), q.device())), routed_gates}, 1);
  return out;
}

RoutingStats routing_stats(const Routing& routing, const HeadSplit& split, int64_t tokens) {
  RoutingStats stats;
  stats.tokens = tokens;
  const int64_t h = split.heads, hs = split.topk == 0 ? h : split.shared;
  stats.selection_rate.assign(size_t(h), 0.0);
  stats.mean_gate.assign(size_t(h), 1.0);
  for (int64_t i = 0; i < hs; ++i) stats.selection_rate[size_t(i)] = 1.0;
  if (routing.topk.defined()) {
    for (int64_t id : routing.topk.to_vector<int64_t>()) stats.selection_rate[size_t(hs + id)] += 1.0 / double(tokens);
    const std::vector<double> p = routing.probs.to_vector<double>();
    double entropy = 0;
    for (double v : p)
      if (v > 0) entropy -= v * std::log(v);
    stats.router_entropy = entropy / double(tokens);
  }
  if (routing.gates.defined()) {
    const std::vector<double> g = mean(routing.gates.data(), {0}).to_vector<double>();
    stats.mean_gate.assign(g.begin(), g.end());
  } else if (routing.topk.defined()) {
    stats.mean_gate = stats.selection_rate;
  }
  return stats;
}

}  // namespace moh
