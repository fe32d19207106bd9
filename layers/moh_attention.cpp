// MoHAttention: routing, then the dense or the sparse execution (see moh_attention.h).
#include "layers/moh_attention.h"

#include <optional>
#include <tuple>
#include <utility>

#include "autograd/autograd.h"
#include "autograd/profile.h"
#include "core/factory.h"
#include "core/ops.h"

namespace moh {
namespace {

// Every gate layer is bias-free (W_r, W_s, W_h as the paper and its official code).
std::shared_ptr<Linear> gate_layer(int64_t dim, int64_t out, DType dtype, Generator& gen) {
  return std::make_shared<Linear>(LinearOptions{dim, out, false, WeightInit::TruncNormal, 0.02, dtype}, gen);
}

}  // namespace

MoHAttention::MoHAttention(const AttentionOptions& attention, const MoHOptions& moh, Generator& gen)
    : MultiHeadAttention(attention, gen), moh_(moh) {
  const int64_t h = num_heads(), hs = moh.shared_heads, k = moh.routed_topk;
  MOH_CHECK(hs >= 0 && hs <= h, "MoHAttention: shared_heads ", hs, " must be in [0, num_heads = ", h, "]");
  MOH_CHECK(k >= 0 && k <= h - hs, "MoHAttention: routed_topk ", k, " must be in [0, ", h - hs,
            "] (the number of routed heads, num_heads - shared_heads)");
  MOH_CHECK(moh.gates || k == 0, "MoHAttention: gates can only be disabled when routed_topk is 0");
  MOH_CHECK(moh.eps > 0, "MoHAttention: eps must be positive, got ", moh.eps);
  split_ = {h, k == 0 ? h : hs, k};
  if (moh.router == MoHRouter::QueryNorm) return;  // parameter-free
  const int64_t dim = options().dim;
  if (k == 0) {
    if (moh.gates) shared_gate_ = register_module("shared_gate", gate_layer(dim, h, options().dtype, gen));
    return;
  }
  router_ = register_module("router", gate_layer(dim, h - hs, options().dtype, gen));
  if (hs > 1) shared_gate_ = register_module("shared_gate", gate_layer(dim, hs, options().dtype, gen));
  if (hs > 0) stage_gate_ = register_module("stage_gate", gate_layer(dim, 2, options().dtype, gen));
}

std::string MoHAttention::extra_repr() const {
  return str_cat(MultiHeadAttention::extra_repr(), ", shared=", split_.shared, ", topk=", split_.topk,
                 moh_.execution == MoHExecution::Sparse ? ", sparse" : ", dense",
                 moh_.router == MoHRouter::QueryNorm ? ", query_norm_router" : "");
}

double MoHAttention::active_share() const {
  return double(split_.shared + split_.topk) / double(split_.heads);
}

// Auto picks the per-head gathered projections by shape (never by timing: the two differ in their last bits,
// so the choice must be the same on every run). They do K/E of the dense FLOPs at somewhat lower efficiency
// (indexed GEMMs over a head's rows against one large BLAS GEMM), and the gap widens for narrow heads, whose
// head dimension is the short side of every per-head product. Measured with bench/attention and a ViT-tiny
// layer on an AMD EPYC (docs/results/moh_speed.md): at 32 heads of 64 gathered wins at 50% and 75% of the
// routed heads and loses at 90%; at 8 heads of 16 it wins at 50% only.
constexpr double kGatheredShare = 0.5;       // any head size
constexpr double kGatheredShareWide = 0.75;  // heads of at least kWideHeadDim
constexpr int64_t kWideHeadDim = 64;

std::optional<MoHProjections> moh_projections_from_name(const std::string& name) {
  if (name == "auto") return MoHProjections::Auto;
  if (name == "gathered") return MoHProjections::Gathered;
  if (name == "dense") return MoHProjections::Dense;
  return std::nullopt;
}

bool MoHAttention::gathered_projections() const {
  if (moh_.router == MoHRouter::QueryNorm) return false;  // it projects every query to score the heads
  switch (moh_.projections) {
    case MoHProjections::Gathered: return true;
    case MoHProjections::Dense: return false;
    case MoHProjections::Auto: break;
  }
  const double share = head_dim() >= kWideHeadDim ? kGatheredShareWide : kGatheredShare;
  return double(split_.topk) <= share * double(split_.routed());
}

MultiHeadAttention::Heads MoHAttention::project_and_route(const ag::Variable& x, const ag::Variable& weight,
                                                           const ag::Variable& bias, const Tensor& pos, bool queries,
                                                           bool training, Routing& routing) const {
  std::vector<ag::Variable> rows{weight};
  int64_t c = 0;  // gate logits
  for (const Linear* layer : {router_.get(), shared_gate_.get(), stage_gate_.get()})
    if (layer) {
      rows.push_back(layer->weight());
      c += layer->weight().size(0);
    }
  if (c == 0) return split_heads(linear(x, weight, bias), pos, queries);
  const int64_t dh = head_dim(), padded = (c + dh - 1) / dh * dh;
  if (padded > c) rows.emplace_back(zeros({padded - c, weight.size(1)}, weight.dtype(), weight.device()));
  const ag::Variable fused_bias =
      bias.defined() ? ag::cat({bias, ag::Variable(zeros({padded}, bias.dtype(), bias.device()))}, 0) : bias;
  Heads heads = split_heads(linear(x, ag::cat(rows, 0), fused_bias), pos, queries);
  ag::ProfileScope phase(kRoutingPhase);
  routing = learned_routing(ag::reshape(ag::narrow(heads.extra, 2, 0, c), {x.size(0) * x.size(1), c}), split_,
                            training, moh_.eps, balance_reducer_);
  return heads;
}

AttentionOutput MoHAttention::attend(const ag::Variable& x, const Tensor& pos, KvCache* cache) {
  const int64_t batch = x.size(0), tokens = x.size(1);
  Routing routing;
  const bool sparse = moh_.execution == MoHExecution::Sparse && split_.topk > 0;
  ag::Variable out = sparse ? forward_sparse(x, pos, routing, cache) : forward_dense(x, pos, routing, cache);
  // The routing's values move to last_routing_ (the balance loss goes back to the caller).
  last_routing_ = {routing.gates.defined() ? ag::Variable(routing.gates.data()) : ag::Variable(),
                   std::move(routing.topk), std::move(routing.probs), ag::Variable()};
  last_tokens_ = batch * tokens;
  stats_.reset();
  return {out, routing.balance_loss};
}

const RoutingStats& MoHAttention::last_stats() const {
  if (!stats_) {
    ag::NoGradGuard no_grad;
    stats_ = routing_stats(last_routing_, split_, last_tokens_);
  }
  return *stats_;
}

ag::Variable MoHAttention::forward_dense(const ag::Variable& x, const Tensor& pos, Routing& routing,
                                         KvCache* cache) {
  const int64_t batch = x.size(0), tokens = x.size(1), h = num_heads();
  std::optional<ag::ProfileScope> phase(std::in_place, kProjectionsPhase);
  Heads heads = project_and_route(x, qkv_->weight(), qkv_->bias(), pos, true, is_training() && !cache, routing);
  if (moh_.router == MoHRouter::QueryNorm) {
    phase.emplace(kRoutingPhase);
    routing = query_norm_routing(ag::reshape(ag::permute(heads.q, {0, 2, 1, 3}), {batch * tokens, h, head_dim()}),
                                 split_, moh_.eps);
    phase.emplace(kProjectionsPhase);
  }
  auto [k, v] = attended_keys_values(heads.k, heads.v, cache);
  phase.emplace(kAttentionPhase);
  ag::Variable o = ag::permute(ag::attention(heads.q, k, v, scale(), options().causal), {0, 2, 1, 3});
  phase.emplace(kRowMovesPhase);
  if (routing.gates.defined()) o = ag::mul(o, ag::view(routing.gates, {batch, tokens, h, 1}));
  phase.emplace(kProjectionsPhase);
  return proj_->forward(ag::reshape(o, {batch, tokens, h * head_dim()}));
}

ag::Variable MoHAttention::forward_sparse(const ag::Variable& x, const Tensor& pos, Routing& routing,
                                          KvCache* cache) {
  const int64_t batch = x.size(0), tokens = x.size(1), n = batch * tokens;
  const int64_t h = num_heads(), dh = head_dim(), dim = options().dim;
  const bool gathered = gathered_projections();
  const int64_t first_position = cache ? cache->length() : 0;  // of these tokens, for the causal mask

  // The query rows of every active (token, head) pair, shared or routed, packed by head; and every key and
  // value attended (with a cache: every cached position, these tokens' appended).
  ag::Variable q_rows, k, v;
  HeadRows rows;
  std::optional<ag::ProfileScope> phase(std::in_place, kProjectionsPhase);
  if (gathered) {
    const QkvParts parts = qkv_parts();
    const Heads heads =
        project_and_route(x, parts.kv_weight, parts.kv_bias, pos, false, is_training() && !cache, routing);
    std::tie(k, v) = attended_keys_values(heads.k, heads.v, cache);
    phase.emplace(kRoutingPhase);
    rows = pack_head_rows(routing.topk, batch, h, split_.shared, first_position);
    phase.emplace(kProjectionsPhase);
    q_rows = ag::gather_linear(ag::reshape(x, {n, dim}), rows.token_index, rows.head_offsets,
                               ag::view(parts.q_weight, {h, dh, dim}),
                               parts.q_bias.defined() ? ag::view(parts.q_bias, {h, dh}) : ag::Variable());
    const Tensor rope_pos = pos.defined() ? pos.reshape({n}).contiguous() : Tensor();
    q_rows = prepare_query_rows(q_rows, rope_pos.defined() ? index_select(rope_pos, 0, rows.token_index) : Tensor());
  } else {
    // One fused projection of every query, key and value (the query-norm router scores them all).
    Heads heads = project_and_route(x, qkv_->weight(), qkv_->bias(), pos, true, is_training() && !cache, routing);
    ag::Variable q_tokens = ag::reshape(ag::permute(heads.q, {0, 2, 1, 3}), {n, h, dh});
    std::tie(k, v) = attended_keys_values(heads.k, heads.v, cache);
    phase.emplace(kRoutingPhase);
    if (moh_.router == MoHRouter::QueryNorm) routing = query_norm_routing(q_tokens, split_, moh_.eps);
    rows = pack_head_rows(routing.topk, batch, h, split_.shared, first_position);
    phase.emplace(kRowMovesPhase);
    q_rows = ag::index_select(ag::reshape(q_tokens, {n * h, dh}), 0, rows.pair_index);
  }

  // One attention call over every active row (query head h reads its K/V head in place); outputs gated.
  phase.emplace(kAttentionPhase);
  ag::Variable o_rows = ag::attention_packed(q_rows, rows.row_offsets, rows.q_pos, k, v, scale(), options().causal, h);
  // Each row scaled by its pair's gate (both routers give gates whenever heads are routed), then the
  // output projection.
  phase.emplace(kRowMovesPhase);
  const ag::Variable pair_gates = ag::reshape(routing.gates, {n * h});
  if (!gathered) {
    // Unselected (token, head) pairs enter W_O as zero rows: one GEMM over every head.
    ag::Variable all = ag::gate_rows(o_rows, pair_gates, rows.pair_index, true);
    phase.emplace(kProjectionsPhase);
    return proj_->forward(ag::reshape(all, {batch, tokens, h * dh}));
  }
  o_rows = ag::gate_rows(o_rows, pair_gates, rows.pair_index, false);
  phase.emplace(kProjectionsPhase);
  ag::Variable w_heads = ag::permute(ag::view(proj_->weight(), {dim, h, dh}), {1, 0, 2});  // [H, dim, Dh]
  ag::Variable y = ag::view(ag::scatter_linear(o_rows, rows.token_index, rows.head_offsets, w_heads, n),
                            {batch, tokens, dim});
  return proj_->bias().defined() ? ag::add(y, proj_->bias()) : y;
}

std::shared_ptr<MoHAttention> convert_to_moh(const MultiHeadAttention& mha, MoHOptions options) {
  options.router = MoHRouter::QueryNorm;
  Generator unused(0);
  auto moh = std::make_shared<MoHAttention>(mha.options(), options, unused);
  moh->load_state_dict(mha.state_dict());
  moh->train(mha.is_training());
  return moh;
}

int64_t set_balance_reducer(Module& model, const BalanceReducer& reducer) {
  int64_t layers = 0;
  if (auto* moh = dynamic_cast<MoHAttention*>(&model)) {
    moh->set_balance_reducer(reducer);
    ++layers;
  }
  for (const auto& [name, child] : model.named_children()) layers += set_balance_reducer(*child, reducer);
  return layers;
}

ag::Variable mean_balance_loss(const std::vector<ag::Variable>& losses) {
  if (losses.empty()) return {};
  ag::Variable sum = losses[0];
  for (size_t i = 1; i < losses.size(); ++i) sum = ag::add(sum, losses[i]);
  return ag::div(sum, double(losses.size()));
}

}  // namespace moh
