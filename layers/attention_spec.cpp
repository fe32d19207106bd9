// AttentionSpec (see attention_spec.h): list broadcasting, the per-block checks and the layer factory.
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

void AttentionSpec::validate(int64_t depth, int64_t heads) const {
  MOH_CHECK(depth > 0 && heads > 0, "AttentionSpec: depth and heads must be positive, got ", depth, ", ", heads);
  if (!any_moh()) return;
  MOH_CHECK(!shared_heads.empty(), "model.routed_topk is set but model.shared_heads is empty (MoH needs both)");
  MOH_CHECK(!routed_topk.empty(), "model.shared_heads is set but model.routed_topk is empty (MoH needs both)");
  check_length(shared_heads, "model.shared_heads", depth);
  check_length(routed_topk, "model.routed_topk", depth);
  for (int64_t b = 0; b < depth; ++b) {
    const int64_t hs = per_block(shared_heads, b), k = per_block(routed_topk, b);
    MOH_CHECK(hs >= 0 && k >= 0, "model.shared_heads/routed_topk must be >= 0, got ", hs, "/", k, " (block ", b,
              ")");
    MOH_CHECK(hs <= heads, "model.shared_heads ", hs, " (block ", b, ") exceeds model.heads ", heads);
    MOH_CHECK(k <= heads - hs, "model.routed_topk ", k, " (block ", b, ") exceeds the ", heads - hs,
              " routed heads (model.heads ", heads, " - model.shared_heads ", hs, ")");
  }
}

std::optional<MoHOptions> AttentionSpec::block(int64_t block, int64_t depth) const {
  MOH_CHECK(block >= 0 && block < depth, "AttentionSpec: block ", block, " out of range for depth ", depth);
  if (!any_moh()) return std::nullopt;
  MoHOptions moh;
  moh.shared_heads = per_block(shared_heads, block);
  moh.routed_topk = per_block(routed_topk, block);
  moh.execution = execution;
  moh.router = router;
  return moh;
}

double AttentionSpec::active_share(int64_t depth, int64_t heads) const {
  double sum = 0;
  for (int64_t b = 0; b < depth; ++b) {
    const std::optional<MoHOptions> moh = block(b, depth);
    // routed_topk 0: every head is shared, whatever shared_heads says.
    sum += moh && moh->routed_topk > 0 ? double(moh->shared_heads + moh->routed_topk) / double(heads) : 1.0;
  }
  return sum / double(depth);
}

std::shared_ptr<MultiHeadAttention> make_block_attention(const AttentionSpec& spec, int64_t block, int64_t depth,
                                                         const AttentionOptions& options, Generator& gen) {
  if (const std::optional<MoHOptions> moh = spec.block(block, depth))
    return std::make_shared<MoHAttention>(options, *moh, gen);
  return std::make_shared<MultiHeadAttention>(options, gen);
}

}  // namespace moh
