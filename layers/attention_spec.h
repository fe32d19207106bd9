// AttentionSpec: the per-block attention choice every transformer family shares (ViT, LLM, DiT).
// Each block is plain multi-head attention, or MoH whose shared_heads / routed_topk come from one
// value (every block) or one value per block; the execution mode and the router kind apply to every
// MoH block. Both lists empty = MHA everywhere; routed_topk 0 in a block = an all-shared (gated) MoH
// layer. validate() checks the lists against a model's depth and head count before any allocation;
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
  std::vector<int64_t> shared_heads;
  std::vector<int64_t> routed_topk;
  MoHExecution execution = MoHExecution::Sparse;
  MoHRouter router = MoHRouter::Learned;

  bool any_moh() const { return !shared_heads.empty() || !routed_topk.empty(); }
  // Throws (moh::Error) unless both lists are empty or both hold 1 or `depth` values, and each block's
  // shared_heads <= heads and routed_topk <= heads - shared_heads.
  void validate(int64_t depth, int64_t heads) const;
  // Block `block`'s MoH options (nullopt: MHA). Requires a validated spec.
  std::optional<MoHOptions> block(int64_t block, int64_t depth) const;
  // Share of (token, head) query rows the model computes, averaged over blocks (1 for MHA).
  double active_share(int64_t depth, int64_t heads) const;
};

// Block `block`'s attention layer: a MultiHeadAttention or an MoHAttention with the same options.
std::shared_ptr<MultiHeadAttention> make_block_attention(const AttentionSpec& spec, int64_t block, int64_t depth,
                                                         const AttentionOptions& options, Generator& gen);

}  // namespace moh
