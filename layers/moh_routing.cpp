// MoH routing math on the tape (see moh_routing.h for the formulas).
#include "layers/moh_routing.h"

#include <algorithm>
#include <cmath>

#include "autograd/autograd.h"
#include "core/factory.h"
#include "core/ops.h"

namespace moh {
namespace {

// The K selected routed heads of each row of p [N, E], ascending (set on `out`: topk on p's device
// and its host copy topk_ids), and their one-hot mask.
Tensor select_topk(const Tensor& p, int64_t k, Routing& out) {
  TopK top = moh::topk(p, k);
  const int64_t n = p.size(0), e = p.size(1);
  std::vector<int64_t> idx = top.indices.to_vector<int64_t>();
  for (int64_t i = 0; i < n; ++i) std::sort(idx.begin() + i * k, idx.begin() + (i + 1) * k);
  std::vector<float> mask(size_t(n * e), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) mask[size_t(i * e + idx[size_t(i * k + j)])] = 1.0f;
  out.topk = from_vector(idx, {n, k}, DType::Int64, p.device());
  out.topk_ids = std::move(idx);
  return from_vector(mask, {n, e}, p.dtype(), p.device());
}

// Forward value: the binary mask; gradient: passed straight through to `soft` where the mask is
// 1. Unselected heads get none, so the dense and the sparse execution (which never computes an
// unselected head's output) train identically.
ag::Variable straight_through(const Tensor& mask, const ag::Variable& soft) {
  return ag::record("straight_through", mask, {soft},
                    [mask](const Tensor& g, const ag::Needs&) { return std::vector<Tensor>{mul(g, mask)}; });
}

}  // namespace

Routing learned_routing(const ag::Variable& x, const GateLayers& layers, const HeadSplit& split, bool training,
                        double eps, const BalanceReducer& reduce_load) {
  Routing out;
  if (split.topk == 0) {
    if (layers.shared_gate)
      out.gates = ag::mul(ag::softmax(layers.shared_gate->forward(x), 1), double(split.heads));
    return out;
  }
  // Every gate layer's logits from one GEMM ([W_r; W_s; W_h] x), then the fused router (core/ops.h:
  // moh_route): softmaxes, top-k, renormalisation and gates in one pass over the tokens.
  std::vector<ag::Variable> weights{layers.router->weight()};
  if (layers.shared_gate) weights.push_back(layers.shared_gate->weight());
  if (layers.stage_gate) weights.push_back(layers.stage_gate->weight());
  const ag::Variable logits = linear(x, weights.size() == 1 ? weights[0] : ag::cat(weights, 0), ag::Variable());
  ag::Route route = ag::moh_route(logits, split.heads, split.shared, split.topk, eps);
  out.gates = route.gates;
  out.probs = route.probs.data();
  out.topk = route.topk;
  out.topk_ids = route.topk.to_vector<int64_t>();
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

ActiveRows pack_active_rows(const std::vector<int64_t>& sel, Device device, int64_t batch, int64_t tokens,
                            const HeadSplit& split, int64_t first_position) {
  const int64_t h = split.heads, k = split.topk, hs = k == 0 ? h : split.shared, n = batch * tokens;
  MOH_CHECK(int64_t(sel.size()) == n * k, "pack_active_rows: expected the ", n, " x ", k, " selected heads of ",
            batch, " x ", tokens, " tokens, got ", sel.size());
  std::vector<int64_t> counts(size_t(h * batch + 1), 0);  // counts[g + 1]: rows of group g = head * B + b
  for (int64_t head = 0; head < hs; ++head)
    for (int64_t b = 0; b < batch; ++b) counts[size_t(head * batch + b + 1)] = tokens;
  for (int64_t i = 0; i < n * k; ++i) {
    const int64_t e = sel[size_t(i)];
    MOH_CHECK(e >= 0 && e < h - hs, "pack_active_rows: selected head ", e, " of token ", i / k, " is not in [0, ",
              h - hs, ")");
    ++counts[size_t((hs + e) * batch + (i / k) / tokens + 1)];
  }
  for (size_t g = 1; g < counts.size(); ++g) counts[g] += counts[g - 1];  // now group start offsets
  std::vector<int64_t> next(counts.begin(), counts.end() - 1);
  const size_t rows = size_t(counts.back());
  std::vector<int64_t> token_index(rows), q_pos(rows), pair_index(rows);
  auto place = [&](int64_t token, int64_t head) {
    const int64_t r = next[size_t(head * batch + token / tokens)]++;
    token_index[size_t(r)] = token;
    q_pos[size_t(r)] = first_position + token % tokens;
    pair_index[size_t(r)] = token * h + head;
  };
  for (int64_t token = 0; token < n; ++token) {  // token order keeps each group ascending
    for (int64_t head = 0; head < hs; ++head) place(token, head);
    for (int64_t j = 0; j < k; ++j) place(token, hs + sel[size_t(token * k + j)]);
  }
  std::vector<int64_t> head_offsets(size_t(h + 1));
  for (int64_t head = 0; head <= h; ++head) head_offsets[size_t(head)] = counts[size_t(head * batch)];
  auto index = [&](const std::vector<int64_t>& v) { return from_vector(v, {int64_t(v.size())}, DType::Int64, device); };
  return {index(token_index), index(q_pos), index(pair_index), index(counts), index(head_offsets)};
}

RoutingStats routing_stats(const Routing& routing, const HeadSplit& split, int64_t tokens) {
  RoutingStats stats;
  stats.tokens = tokens;
  const int64_t h = split.heads, hs = split.topk == 0 ? h : split.shared;
  stats.selection_rate.assign(size_t(h), 0.0);
  stats.mean_gate.assign(size_t(h), 1.0);
  for (int64_t i = 0; i < hs; ++i) stats.selection_rate[size_t(i)] = 1.0;
  if (routing.topk.defined()) {
    for (int64_t id : routing.topk_ids) stats.selection_rate[size_t(hs + id)] += 1.0 / double(tokens);
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
