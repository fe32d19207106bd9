// MultiHeadAttention: projections, qk-norm, RoPE, the KV cache and the blocked attention op (which
// reads the GQA key/value heads in place).
#include "layers/multi_head_attention.h"

#include <cmath>
#include <tuple>

#include "autograd/autograd.h"
#include "autograd/profile.h"
#include "core/factory.h"
#include "core/ops.h"

namespace moh {

MultiHeadAttention::MultiHeadAttention(const AttentionOptions& options, Generator& gen) : options_(options) {
  AttentionOptions& o = options_;
  MOH_CHECK(o.dim > 0 && o.num_heads > 0, "MultiHeadAttention: dim and num_heads must be positive, got dim=", o.dim,
            " num_heads=", o.num_heads);
  if (o.head_dim == 0) {
    MOH_CHECK(o.dim % o.num_heads == 0, "MultiHeadAttention: dim ", o.dim, " is not divisible by num_heads ",
              o.num_heads, " (set head_dim explicitly)");
    o.head_dim = o.dim / o.num_heads;
  }
  if (o.num_kv_heads == 0) o.num_kv_heads = o.num_heads;
  MOH_CHECK(o.num_kv_heads > 0 && o.num_heads % o.num_kv_heads == 0, "MultiHeadAttention: num_kv_heads ",
            o.num_kv_heads, " must divide num_heads ", o.num_heads);
  MOH_CHECK(o.rope_theta == 0 || o.head_dim % 2 == 0, "MultiHeadAttention: RoPE needs an even head_dim, got ",
            o.head_dim);
  const int64_t qkv_out = (o.num_heads + 2 * o.num_kv_heads) * o.head_dim;
  qkv_ = register_module("qkv", std::make_shared<Linear>(
                                    LinearOptions{o.dim, qkv_out, o.qkv_bias, o.init, o.init_std, o.dtype}, gen));
  if (o.qk_norm) {
    q_norm_ = register_module("q_norm", std::make_shared<LayerNorm>(LayerNormOptions{o.head_dim, 1e-6, true, o.dtype}));
    k_norm_ = register_module("k_norm", std::make_shared<LayerNorm>(LayerNormOptions{o.head_dim, 1e-6, true, o.dtype}));
  }
  proj_ = register_module("proj", std::make_shared<Linear>(LinearOptions{o.num_heads * o.head_dim, o.dim, o.proj_bias,
                                                                         o.init, o.init_std, o.dtype},
                                                           gen));
  if (o.rope_theta > 0) rope_.emplace(RopeOptions{o.head_dim, o.max_positions, o.rope_theta, o.dtype});
}

std::string MultiHeadAttention::extra_repr() const {
  const AttentionOptions& o = options_;
  std::string s = str_cat("dim=", o.dim, ", heads=", o.num_heads, ", head_dim=", o.head_dim);
  if (o.num_kv_heads != o.num_heads) s += str_cat(", kv_heads=", o.num_kv_heads);
  if (o.causal) s += ", causal";
  if (o.qk_norm) s += ", qk_norm";
  if (o.rope_theta > 0) s += str_cat(", rope_theta=", o.rope_theta);
  return s;
}

double MultiHeadAttention::scale() const { return 1.0 / std::sqrt(double(options_.head_dim)); }

void MultiHeadAttention::check_input(const ag::Variable& x) const {
  MOH_CHECK(x.defined() && x.dim() == 3 && x.size(2) == options_.dim, layer_label(*this),
            ": expected an input [B, T, ", options_.dim, "], got ", x.defined() ? x.describe() : "undefined");
  MOH_CHECK(x.dtype() == options_.dtype, layer_label(*this), ": input ", x.describe(), " does not match the layer's ",
            dtype_name(options_.dtype));
}

void MultiHeadAttention::to(Device device) {
  Module::to(device);
  if (rope_) rope_->to(device);
}

Tensor MultiHeadAttention::resolve_positions(const Tensor& positions, int64_t batch, int64_t tokens) const {
  if (!rope_) return {};
  Tensor pos = positions.defined() ? positions : arange(tokens, DType::Int64, rope_->cos().device());
  MOH_CHECK(pos.dtype() == DType::Int64 && (pos.shape() == Shape{tokens} || pos.shape() == Shape{batch, tokens}),
            layer_label(*this), ": positions must be int64 [T] or [B, T] = [", batch, ", ", tokens, "], got ",
            describe(pos));
  return pos.dim() == 1 ? pos.unsqueeze(0).expand({batch, tokens}) : pos;
}

MultiHeadAttention::QkvParts MultiHeadAttention::qkv_parts() const {
  const std::vector<int64_t> rows{options_.num_heads * options_.head_dim, 2 * options_.num_kv_heads * options_.head_dim};
  const std::vector<ag::Variable> w = ag::split(qkv_->weight(), rows, 0);
  if (!qkv_->bias().defined()) return {w[0], ag::Variable(), w[1], ag::Variable()};
  const std::vector<ag::Variable> b = ag::split(qkv_->bias(), rows, 0);
  return {w[0], b[0], w[1], b[1]};
}

ag::Variable MultiHeadAttention::prepare_queries(const ag::Variable& q, const Tensor& pos) const {
  ag::Variable out = ag::permute(q_norm_ ? q_norm_->forward(q) : q, {0, 2, 1, 3});  // [B, h, T, Dh]
  return rope_ ? rope_->forward(out, pos) : out;
}

std::pair<ag::Variable, ag::Variable> MultiHeadAttention::prepare_keys_values(const ag::Variable& k,
                                                                              const ag::Variable& v,
                                                                              const Tensor& pos) const {
  ag::Variable kp = ag::permute(k_norm_ ? k_norm_->forward(k) : k, {0, 2, 1, 3});  // [B, Hkv, T, Dh]
  if (rope_) kp = rope_->forward(kp, pos);
  return {kp, ag::permute(v, {0, 2, 1, 3})};
}

std::pair<ag::Variable, ag::Variable> MultiHeadAttention::attended_keys_values(const ag::Variable& k,
                                                                               const ag::Variable& v,
                                                                               KvCache* cache) const {
  if (!cache) return {k, v};
  cache->append(k.data(), v.data());
  return {ag::Variable(cache->keys()), ag::Variable(cache->values())};
}

MultiHeadAttention::Heads MultiHeadAttention::split_heads(const ag::Variable& projection, const Tensor& pos,
                                                           bool queries) const {
  const int64_t h = queries ? options_.num_heads : 0, hkv = options_.num_kv_heads, dh = options_.head_dim;
  const int64_t columns = projection.size(2), extra = columns / dh - h - 2 * hkv;
  MOH_CHECK(columns % dh == 0 && extra >= 0, layer_label(*this), ": a fused projection of ", columns,
            " columns is not ", h, " query and ", 2 * hkv, " key/value heads of ", dh, " plus whole groups of ", dh);
  std::vector<int64_t> sizes{hkv, hkv};
  if (queries) sizes.insert(sizes.begin(), h);
  if (extra > 0) sizes.push_back(extra);
  const std::vector<ag::Variable> parts =
      ag::split(ag::view(projection, {projection.size(0), projection.size(1), columns / dh, dh}), sizes, 2);
  const size_t kv = queries ? 1 : 0;
  Heads heads;
  std::tie(heads.k, heads.v) = prepare_keys_values(parts[kv], parts[kv + 1], pos);
  if (queries) heads.q = prepare_queries(parts[0], pos);
  if (extra > 0) heads.extra = ag::view(parts[kv + 2], {projection.size(0), projection.size(1), extra * dh});
  return heads;
}

ag::Variable MultiHeadAttention::prepare_query_rows(const ag::Variable& rows, const Tensor& rope_pos) const {
  ag::Variable out = q_norm_ ? q_norm_->forward(rows) : rows;
  return rope_ ? rope_->forward(out, rope_pos) : out;
}

AttentionOutput MultiHeadAttention::forward(const ag::Variable& x, const Tensor& positions) {
  check_input(x);
  return attend(x, resolve_positions(positions, x.size(0), x.size(1)), nullptr);
}

AttentionOutput MultiHeadAttention::forward_cached(const ag::Variable& x, KvCache& cache) {
  check_input(x);
  const KvCacheShape& c = cache.shape();
  MOH_CHECK(options_.causal, layer_label(*this), ": forward_cached needs a causal layer (a non-causal one lets "
            "earlier tokens attend later ones, which decoding cannot reproduce)");
  MOH_CHECK(c.batch == x.size(0) && c.kv_heads == options_.num_kv_heads && c.head_dim == options_.head_dim &&
                cache.dtype() == options_.dtype && cache.device() == x.device(),
            layer_label(*this), ": the cache [", c.batch, ", ", c.kv_heads, ", ", c.max_length, ", ", c.head_dim,
            "] ", dtype_name(cache.dtype()), " on ", cache.device(), " does not fit this layer and input ",
            x.describe(), " (expected batch ", x.size(0), ", ", options_.num_kv_heads, " KV heads of ",
            options_.head_dim, ")");
  ag::NoGradGuard no_grad;
  const int64_t batch = x.size(0), tokens = x.size(1), start = cache.length();
  const Tensor positions = rope_ ? arange(double(start), double(start + tokens), 1, DType::Int64, x.device())
                                 : Tensor();
  return attend(x, resolve_positions(positions, batch, tokens), &cache);
}

KvCache MultiHeadAttention::make_cache(int64_t batch, int64_t max_length) const {
  return KvCache({batch, options_.num_kv_heads, max_length, options_.head_dim}, options_.dtype,
                 qkv_->weight().device());
}

AttentionOutput MultiHeadAttention::attend(const ag::Variable& x, const Tensor& pos, KvCache* cache) {
  const int64_t batch = x.size(0), tokens = x.size(1);
  std::optional<ag::ProfileScope> phase(std::in_place, kProjectionsPhase);
  Heads heads = split_heads(qkv_->forward(x), pos);
  auto [k, v] = attended_keys_values(heads.k, heads.v, cache);
  phase.emplace(kAttentionPhase);
  ag::Variable o = ag::attention(heads.q, k, v, scale(), options_.causal);  // [B, H, T, Dh]
  phase.emplace(kProjectionsPhase);
  ag::Variable merged = ag::reshape(ag::permute(o, {0, 2, 1, 3}), {batch, tokens, -1});  // a view: no copy
  return {proj_->forward(merged), {}};
}

}  // namespace moh
