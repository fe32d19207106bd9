// AttentionSpec (see attention_spec.h): list broadcasting, the per-block checks, the head-weighted active
// share and the layer factory.
#include "layers/attention_spec.h"

#include "core/error.h"

namespace moh {
namespace {

// The list's value for `block`: one value broadcasts, otherwise one per block.
int64_t per_block(const std::vector<int64_t>& list, int64_t block) {
  return list.size() == 1 ? list[0] : list[size_t(block)];
}

void check_length(const std::vector<int64_t>& list, const char* key, int64_t depth) {
  MOH_CHECK(list.size() == 1 || int64_t(list.size()) == depth, key, " has ", list.size(),
            " values; expected 1 (used by every block) or one per block (", depth, ")");
}

}  // namespace

void AttentionSpec::validate(int64_t depth, int64_t model_heads) const {
  MOH_CHECK(depth > 0 && model_heads > 0, "AttentionSpec: depth and heads must be positive, got ", depth, ", ",
            model_heads);
  if (!heads.empty()) {
    check_length(heads, "model.block_heads", depth);
    for (int64_t b = 0; b < depth; ++b)
      MOH_CHECK(per_block(heads, b) > 0, "model.block_heads must be positive, got ", per_block(heads, b),
                " (block ", b, ")");
  }
  if (!any_moh()) return;
  MOH_CHECK(!shared_heads.empty(), "model.routed_topk is set but model.shared_heads is empty (MoH needs both)");
  MOH_CHECK(!routed_topk.empty(), "model.shared_heads is set but model.routed_topk is empty (MoH needs both)");
  check_length(shared_heads, "model.shared_heads", depth);
  check_length(routed_topk, "model.routed_topk", depth);
  const char* heads_key = heads.empty() ? "model.heads" : "model.block_heads";
  for (int64_t b = 0; b < depth; ++b) {
    const int64_t h = block_heads(b, model_heads), hs = per_block(shared_heads, b), k = per_block(routed_topk, b);
    MOH_CHECK(hs >= 0 && k >= 0, "model.shared_heads/routed_topk must be >= 0, got ", hs, "/", k, " (block ", b,
              ")");
    MOH_CHECK(hs <= h, "model.shared_heads ", hs, " (block ", b, ") exceeds ", heads_key, " ", h);
    MOH_CHECK(k <= h - hs, "model.routed_topk ", k, " (block ", b, ") exceeds the ", h - hs, " routed heads (",
              heads_key, " ", h, " - model.shared_heads ", hs, ")");
  }
}

int64_t AttentionSpec::block_heads(int64_t block, int64_t model_heads) const {
  return heads.empty() ? model_heads : per_block(heads, block);
}

std::optional<MoHOptions> AttentionSpec::block(int64_t block, int64_t depth) const {
  MOH_CHECK(block >= 0 && block < depth, "AttentionSpec: block ", block, " out of range for depth ", depth);
  if (!any_moh()) return std::nullopt;
  MoHOptions moh;
  moh.shared_heads = per_block(shared_heads, block);
  moh.routed_topk = per_block(routed_topk, block);
  moh.execution = execution;
  moh.projections = projections;
  moh.router = router;
  return moh;
}

double AttentionSpec::active_share(int64_t depth, int64_t model_heads) const {
  double active = 0, all = 0;
  for (int64_t b = 0; b < depth; ++b) {
    const double h = double(block_heads(b, model_heads));
    const std::optional<MoHOptions> moh = block(b, depth);
    // routed_topk 0: every head is shared, whatever shared_heads says.
    active += moh && moh->routed_topk > 0 ? double(moh->shared_heads + moh->routed_topk) : h;
    all += h;
  }
  return active / all;
}

std::shared_ptr<MultiHeadAttention> make_block_attention(const AttentionSpec& spec, int64_t block, int64_t depth,
                                                         const AttentionOptions& options, Generator& gen) {
  AttentionOptions block_options = options;
  block_options.num_heads = spec.block_heads(block, options.num_heads);
  try {
    if (const std::optional<MoHOptions> moh = spec.block(block, depth))
      return std::make_shared<MoHAttention>(block_options, *moh, gen);
    return std::make_shared<MultiHeadAttention>(block_options, gen);
  } catch (const Error& e) {  // a head count that does not fit the width: say which block has it
    MOH_FAIL("block ", block, " (", block_options.num_heads, " heads): ", e.what());
  }
}

}  // namespace moh
