// AttentionSpec: the per-block attention choice every transformer family shares (ViT, LLM, DiT).
// Each block is plain multi-head attention, or MoH whose shared_heads / routed_topk come from one
// value (every block) or one value per block; the execution mode, the sparse projections and the router kind
// apply to every MoH block. Both lists empty = MHA everywhere; routed_topk 0 in a block = an all-shared (gated) MoH
// layer. `heads` optionally gives each block its own head count (the paper's MoH-DiT-L/XL grow it with
// depth); empty = the model's head count everywhere. validate() checks the lists against a model's depth
// and head count before any allocation;
// its messages name the fields by the config keys that set them (model.shared_heads, ...), which the
// trainers' schema fragment (trainers/attention_config.h) declares for every family.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "layers/moh_attention.h"

namespace moh {

struct AttentionSpec {
  std::vector<int64_t> heads;  // per-block head counts (1 value or one per block); empty: the model's
  std::vector<int64_t> shared_heads;
  std::vector<int64_t> routed_topk;
  MoHExecution execution = MoHExecution::Sparse;
  MoHProjections projections = MoHProjections::Auto;
  MoHRouter router = MoHRouter::Learned;

  bool any_moh() const { return !shared_heads.empty() || !routed_topk.empty(); }
  // Throws (moh::Error) unless `heads` is empty or holds 1 or `depth` positive values, both MoH lists are
  // empty or hold 1 or `depth` values, and each block's shared_heads <= its heads and routed_topk <= its
  // heads - shared_heads. model_heads is the model's head count, used where `heads` is empty.
  void validate(int64_t depth, int64_t model_heads) const;
  // Block `block`'s head count. Requires a validated spec.
  int64_t block_heads(int64_t block, int64_t model_heads) const;
  // Block `block`'s MoH options (nullopt: MHA). Requires a validated spec.
  std::optional<MoHOptions> block(int64_t block, int64_t depth) const;
  // Share of the model's (token, head) query rows it computes: active heads summed over blocks over all
  // heads summed over blocks (1 for MHA; with equal head counts, the mean of the blocks' shares).
  double active_share(int64_t depth, int64_t model_heads) const;
};

// Block `block`'s attention layer: a MultiHeadAttention or an MoHAttention with `options` and the block's
// head count (options.num_heads is the model's; options.head_dim 0 = dim / the block's head count).
std::shared_ptr<MultiHeadAttention> make_block_attention(const AttentionSpec& spec, int64_t block, int64_t depth,
                                                         const AttentionOptions& options, Generator& gen);

}  // namespace moh
