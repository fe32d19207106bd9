// The attention keys every transformer family's schema includes (model.attention, model.block_heads,
// model.shared_heads, model.routed_topk, model.moh_execution, model.moh_projections, model.moh_router) and their
// reading into an AttentionSpec (layers/attention_spec.h), checked against the model's depth and head count with ConfigErrors that
// name the key and where its value came from. One key namespace for ViT, LLM and DiT.
#pragma once

#include <cstdint>

#include "layers/attention_spec.h"
#include "trainers/config.h"

namespace moh {

void add_attention_keys(config::Schema& schema);
AttentionSpec attention_spec_from_config(const Config& cfg, int64_t depth, int64_t heads);

}  // namespace moh
