// MoHAttention: multi-head attention whose heads are experts (MoH, arXiv 2410.11842). Same
// parameters and interface as MultiHeadAttention (so an MHA checkpoint loads into it) plus the gate
// layers of the learned router (`router`, `shared_gate`, `stage_gate`), a balance loss returned
// with the output, and routing statistics. Routing math: moh_routing.h.
// Two executions that agree numerically: Dense computes every head and multiplies by its gate;
// Sparse computes only the active (token, head) pairs, shared heads' and the selected routed ones, packed
// by head (core/ops.h: pack_head_rows): their query projections (gather_linear), their attention rows (one
// attention_packed call over all heads) and their slices of the output projection (scatter_linear). Keys
// and values are computed for every token and head in both. Decoding (forward_cached) routes only the new
// tokens and reads the keys and values of earlier positions from the cache, in either execution.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "layers/moh_routing.h"
#include "layers/multi_head_attention.h"

namespace moh {

// MoH's profile phases beside kProjectionsPhase and kAttentionPhase (multi_head_attention.h).
inline constexpr const char* kRoutingPhase = "routing";     // moh_route, balance loss, row packing (the gate
                                                            // logits come from the projection GEMM)
inline constexpr const char* kRowMovesPhase = "row moves";  // sparse: query rows gathered, gates, outputs scattered

enum class MoHExecution { Dense, Sparse };
enum class MoHRouter { Learned, QueryNorm };
// How the sparse execution computes the routed heads' query and output projections:
// Gathered - per routed head, a GEMM over only the rows of tokens that selected it, read in place and
//            added into place (core/cpu/indexed_gemm.h; fewest FLOPs);
// Dense    - one GEMM over every token and routed head, keeping the selected query rows and feeding
//            unselected (token, head) pairs to W_O as zeros (full FLOPs, one large efficient GEMM);
// Auto     - Gathered when a token keeps at most half of the routed heads (three quarters with heads of 64 or
//            more dimensions), else Dense: a rule by shape, so that every run makes the same choice.
// The query-norm router always projects densely (it scores every head's query).
// Both give the same values; the attention core is sparse either way.
enum class MoHProjections { Auto, Gathered, Dense };
// "auto", "gathered" or "dense" (the config's model.moh_projections); none for any other name.
std::optional<MoHProjections> moh_projections_from_name(const std::string& name);

struct MoHOptions {
  int64_t shared_heads = 0;  // hs, heads [0, hs) always on
  int64_t routed_topk = 0;   // K of the E = H - hs routed heads per token; 0 = every head shared (hs ignored)
  MoHExecution execution = MoHExecution::Sparse;
  MoHRouter router = MoHRouter::Learned;
  bool gates = true;    // K == 0 only: false = no gate layer (exactly MultiHeadAttention)
  double eps = 1e-6;    // floor of the routed renormalisation denominator (and query-norm std)
  MoHProjections projections = MoHProjections::Auto;
};

class MoHAttention : public MultiHeadAttention {
 public:
  MoHAttention(const AttentionOptions& attention, const MoHOptions& moh, Generator& gen);
  std::string type_name() const override { return "MoHAttention"; }
  std::string extra_repr() const override;

  const MoHOptions& moh_options() const { return moh_; }
  void set_execution(MoHExecution execution) { moh_.execution = execution; }
  void set_projections(MoHProjections projections) { moh_.projections = projections; }
  // How the learned router pools its balance statistics (moh_routing.h); empty: this forward's tokens.
  void set_balance_reducer(BalanceReducer reducer) { balance_reducer_ = std::move(reducer); }
  HeadSplit head_split() const { return split_; }
  // Share of (token, head) query rows this layer computes: (hs + K) / H.
  double active_share() const;
  // Whether the sparse execution uses per-head gathered projections (resolves Auto).
  bool gathered_projections() const;
  // Statistics of the last forward, computed on the first call after it (a forward only keeps its
  // routing's values: no host reads of device tensors in the training step).
  const RoutingStats& last_stats() const;

 private:
  // x [B, T, dim] -> out [B, T, dim]; balance_loss is set in training when K > 0 with the learned
  // router (never when decoding with a cache).
  AttentionOutput attend(const ag::Variable& x, const Tensor& pos, KvCache* cache) override;
  ag::Variable forward_dense(const ag::Variable& x, const Tensor& pos, Routing& routing, KvCache* cache);
  ag::Variable forward_sparse(const ag::Variable& x, const Tensor& pos, Routing& routing, KvCache* cache);
  // x [B, T, dim] through weight [M, dim] and bias (undefined: none), cut by split_heads (`queries`: whether M
  // holds the query rows). The learned router's gate layers ride along: their rows appended to weight in
  // learned_routing's column order and zero-padded to whole heads, so one GEMM gives the projection and the gate
  // logits (the narrow gate GEMM alone ran far below the large one's rate) and split_heads' one node cuts them
  // apart (Heads::extra); `routing` is then set from the logits. Without gate layers (the query-norm router, or
  // all-shared heads without gates): a plain projection, `routing` untouched.
  Heads project_and_route(const ag::Variable& x, const ag::Variable& weight, const ag::Variable& bias,
                          const Tensor& pos, bool queries, bool training, Routing& routing) const;

  MoHOptions moh_;
  HeadSplit split_;
  std::shared_ptr<Linear> router_, shared_gate_, stage_gate_;
  BalanceReducer balance_reducer_;
  Routing last_routing_;  // the last forward's routing, values only (gates off the tape)
  int64_t last_tokens_ = 0;
  mutable std::optional<RoutingStats> stats_;
};

// An MoH layer with the query-norm router (no new parameters) holding a copy of mha's weights:
// the LLaMA3 conversion recipe.
std::shared_ptr<MoHAttention> convert_to_moh(const MultiHeadAttention& mha, MoHOptions options);

// Hands `reducer` to every MoHAttention in `model`'s module tree (`model` included; empty: back to
// local statistics) and returns how many there are. Other models are untouched.
int64_t set_balance_reducer(Module& model, const BalanceReducer& reducer);

// The mean of a model's per-layer balance losses (the term moh.balance_loss weights); undefined when
// `losses` is empty (a model without routed layers, or evaluation).
ag::Variable mean_balance_loss(const std::vector<ag::Variable>& losses);

}  // namespace moh
