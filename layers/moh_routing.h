// MoH head routing, exactly as DESIGN.md ("MoH attention") defines it, for N tokens and H heads
// of which the first hs are shared and E = H - hs are routed, each token keeping K routed heads:
//   learned router:  p = softmax(W_r x), m = one_hot(topk(p, K)), r = K * p*m / max(sum(p*m), eps),
//                    s = hs * softmax(W_s x) (1 when hs == 1), [a1, a2] = 2 * softmax(W_h x),
//                    g = [a1 * s, a2 * r] (hs > 0) or r (hs == 0);
//                    L_b = E * sum_i mean_t(p_i) * mean_t(m_i) in training (gradient through p only).
//   all-shared (K == 0): g = H * softmax(W_s' x), or no gates at all (plain MHA).
//   query-norm router (converting a trained MHA): score = softmax over routed heads of
//                    ||q_i|| / std_j ||q_j|| (std over the routed heads), binary gates (1 for shared
//                    and selected heads) with a straight-through gradient to the scores of the
//                    selected heads; no balance loss.
// Also per-layer routing statistics; the packed row layout that MoH's sparse mode executes is core/ops.h's
// pack_head_rows over Routing::topk.
#pragma once

#include <functional>
#include <vector>

#include "autograd/variable.h"

namespace moh {

struct HeadSplit {
  int64_t heads = 0;   // H
  int64_t shared = 0;  // hs
  int64_t topk = 0;    // K (0: all heads shared)
  int64_t routed() const { return topk == 0 ? 0 : heads - shared; }
};

struct Routing {
  ag::Variable gates;         // [N, H]; undefined = every gate is 1
  Tensor topk;                // [N, K] int64 distinct routed-head ids in [0, E) on the gates' device (learned
                              // router: ascending; query norm: by falling score); undefined when K == 0
  Tensor probs;               // [N, E] router (or query-norm) probabilities, values only
  ag::Variable balance_loss;  // 0-d; learned router in training with K > 0, else undefined
};

// Pools a layer's balance-loss head loads mean_t(m_i) ([E], in place) beyond the tokens of one
// forward: data-parallel training with moh.balance_scope: global hands each MoH layer of its model an
// average over ranks (set_balance_reducer in moh_attention.h). Empty: the local statistic.
using BalanceReducer = std::function<void(Tensor& load)>;

// The learned router over its gate layers' logits [N, C] (bias-free layers of x: MoHAttention computes them in its
// q/k/v GEMM): K > 0: the columns [W_r x (E) | W_s x (hs, when hs > 1) | W_h x (2, when hs > 0)], moh_route's
// layout; K == 0: W_s' x [N, H], or undefined for no gates.
Routing learned_routing(const ag::Variable& logits, const HeadSplit& split, bool training, double eps,
                        const BalanceReducer& reduce_load = {});
// q [N, H, Dh] (prepared queries of every head).
Routing query_norm_routing(const ag::Variable& q, const HeadSplit& split, double eps);

// How a layer routed its last batch (MoHAttention::last_stats computes it on demand: it reads the
// routing back to the host).
struct RoutingStats {
  int64_t tokens = 0;
  std::vector<double> selection_rate;  // [H] share of tokens using each head (shared heads: 1)
  std::vector<double> mean_gate;       // [H] mean gate value over tokens (0 where unselected)
  double router_entropy = 0.0;         // mean over tokens of -sum p log p (0 without routed heads)
};
RoutingStats routing_stats(const Routing& routing, const HeadSplit& split, int64_t tokens);

}  // namespace moh
