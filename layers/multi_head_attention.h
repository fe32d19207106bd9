// MultiHeadAttention: fused qkv projection (`qkv.weight` [(H + 2 Hkv) * Dh, dim], optional bias),
// optional grouped-query attention (Hkv < H key/value heads, each shared by H / Hkv query heads),
// optional qk-norm (LayerNorm over Dh: `q_norm`, `k_norm`, as timm), optional RoPE on q and k,
// optional causal mask, the blocked attention op, and the output projection (`proj`). Names follow
// timm so ViT checkpoints load by name. MoHAttention (moh_attention.h) extends this class with
// routing; the protected pieces are the steps both share. Two entries: forward() over a whole
// sequence (training and evaluation), and forward_cached() for decoding, which appends the new
// tokens' keys and values to a KvCache (kv_cache.h) and attends over every cached position.
#pragma once

#include <memory>
#include <optional>

#include "layers/kv_cache.h"
#include "layers/linear.h"
#include "layers/norm.h"
#include "layers/rope.h"

namespace moh {

// The phases an attention layer's time is profiled under (autograd/profile.h, bench/attention --scope profile).
inline constexpr const char* kProjectionsPhase = "projections";  // the q, k, v and output projections
inline constexpr const char* kAttentionPhase = "attention";      // the attention core

struct AttentionOptions {
  int64_t dim = 0;
  int64_t num_heads = 0;
  int64_t head_dim = 0;      // 0: dim / num_heads
  int64_t num_kv_heads = 0;  // 0: num_heads; fewer (dividing num_heads) = grouped-query attention
  bool qkv_bias = true;
  bool proj_bias = true;
  bool causal = false;
  bool qk_norm = false;
  double rope_theta = 0.0;      // > 0 enables rotary embedding with this base
  int64_t max_positions = 4096;  // RoPE table length
  WeightInit init = WeightInit::XavierUniform;
  double init_std = 0.02;
  DType dtype = DType::Float32;
};

struct AttentionOutput {
  ag::Variable out;           // [B, T, dim]
  ag::Variable balance_loss;  // MoH layers in training with routed heads; else undefined
};

class MultiHeadAttention : public Module {
 public:
  MultiHeadAttention(const AttentionOptions& options, Generator& gen);
  std::string type_name() const override { return "MultiHeadAttention"; }
  std::string extra_repr() const override;
  void to(Device device) override;  // also the RoPE tables

  // x [B, T, dim]; positions (RoPE only): undefined = 0..T-1, int64 [T] or [B, T].
  AttentionOutput forward(const ag::Variable& x, const Tensor& positions = {});
  // Decoding (causal layers only): x [B, Tnew, dim] holds the tokens at positions [L, L + Tnew), L =
  // cache.length(); their keys and values are appended to `cache` and they attend causally over all
  // L + Tnew cached positions, so the output equals rows [L, L + Tnew) of forward() over the whole
  // sequence. Records no tape (values only) and no balance loss.
  AttentionOutput forward_cached(const ag::Variable& x, KvCache& cache);
  // An empty cache for this layer: `batch` sequences of up to `max_length` positions, on the layer's
  // dtype and device.
  KvCache make_cache(int64_t batch, int64_t max_length) const;

  const AttentionOptions& options() const { return options_; }
  int64_t num_heads() const { return options_.num_heads; }
  int64_t head_dim() const { return options_.head_dim; }
  int64_t num_kv_heads() const { return options_.num_kv_heads; }

 protected:
  // Both entries after their checks: x [B, T, dim] at the resolved positions `pos` (int64 [B, T],
  // undefined when RoPE is off); `cache` is null for a whole-sequence forward.
  virtual AttentionOutput attend(const ag::Variable& x, const Tensor& pos, KvCache* cache);

  // The steps MHA and MoH share.
  Tensor resolve_positions(const Tensor& positions, int64_t batch, int64_t tokens) const;
  // q [B, T, h, Dh] (a view of a projection) -> [B, h, T, Dh], q-normed and rotated.
  ag::Variable prepare_queries(const ag::Variable& q, const Tensor& pos) const;
  // k, v [B, T, Hkv, Dh] -> [B, Hkv, T, Dh] each: k-normed and rotated (the K/V heads, not repeated:
  // the attention ops read each one for its H / Hkv query heads).
  std::pair<ag::Variable, ag::Variable> prepare_keys_values(const ag::Variable& k, const ag::Variable& v,
                                                            const Tensor& pos) const;
  // The keys and values attention reads, [B, Hkv, Tk, Dh] each (the K/V heads, not repeated), from
  // this call's k, v [B, Hkv, T, Dh]: these alone (Tk = T), or, with a cache, every cached position
  // after appending them (Tk = L + T).
  std::pair<ag::Variable, ag::Variable> attended_keys_values(const ag::Variable& k, const ag::Variable& v,
                                                             KvCache* cache) const;
  // Splits a fused projection [B, T, (H + 2 Hkv + X) * Dh] by one split node (its backward assembles the
  // gradient once) into prepared q [B, H, T, Dh], the KV heads k, v [B, Hkv, T, Dh] and its X trailing groups of
  // Dh columns, extra [B, T, X * Dh] (undefined when X == 0; MoH carries its gate logits there). Without
  // `queries` the projection has no query columns ([B, T, (2 Hkv + X) * Dh]) and q is undefined.
  struct Heads {
    ag::Variable q, k, v, extra;
  };
  Heads split_heads(const ag::Variable& projection, const Tensor& pos, bool queries = true) const;
  // The fused qkv weight and bias cut into their query rows [H * Dh] and key/value rows [2 Hkv * Dh] by one
  // split node each (bias undefined without qkv_bias): the backward assembles the fused gradient once, where
  // a narrow per part would build a zero tensor of the whole weight for each.
  struct QkvParts {
    ag::Variable q_weight, q_bias, kv_weight, kv_bias;
  };
  QkvParts qkv_parts() const;
  // q-norm and RoPE for packed query rows [R, Dh] at rope positions [R] (undefined without RoPE).
  ag::Variable prepare_query_rows(const ag::Variable& rows, const Tensor& rope_pos) const;
  void check_input(const ag::Variable& x) const;
  double scale() const;

  AttentionOptions options_;
  std::shared_ptr<Linear> qkv_, proj_;
  std::shared_ptr<LayerNorm> q_norm_, k_norm_;
  std::optional<RotaryEmbedding> rope_;
};

}  // namespace moh
