// LanguageModel: a decoder-only transformer, LLaMA- or GPT-2-style (models/llm/llm_options.h).
//   tokens [B, T] -> tok_embed (+ pos_embed, GPT-2) -> blocks.<i> (pre-norm, causal:
//   x + attn(norm1(x)), x + mlp(norm2(x))) -> norm -> logits [B, T, V], through lm_head or, tied,
//   x · tok_embed.weightᵀ (one shared parameter that collects the gradients of both uses).
// Parameter names: tok_embed.weight, pos_embed.weight (GPT-2), blocks.<i>.norm1.*, blocks.<i>.attn.*
// (qkv, proj, MoH gates), blocks.<i>.norm2.*, blocks.<i>.mlp.* (fc1/fc2 or w1/w2/w3), norm.*,
// lm_head.weight (untied only). Each block's attention is MHA or MoH from options.attention; forward
// returns the balance losses of the routed MoH blocks in training.
// With options.recompute, each block runs under ag::checkpoint (autograd/checkpoint.h): the forward
// keeps only the block inputs and the backward recomputes each block, with the same gradients.
// Init (GPT-2/nanoGPT): normal(0.02) for every Linear and Embedding weight, the residual projections
// (attn.proj, mlp.fc2 / mlp.w2) at 0.02 / sqrt(2 * depth), zero biases, norm weights one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "core/random.h"
#include "layers/embedding.h"
#include "layers/linear.h"
#include "layers/module.h"
#include "layers/multi_head_attention.h"
#include "models/llm/llm_cache.h"
#include "models/llm/llm_options.h"

namespace moh {

class LlmBlock : public Module {
 public:
  // Block `index` of the resolved options' depth.
  LlmBlock(const LlmOptions& resolved_options, int64_t index, Generator& gen);
  std::string type_name() const override { return "LlmBlock"; }
  // x [B, T, dim] -> [B, T, dim]; positions as MultiHeadAttention::forward (RoPE; undefined = 0..T-1).
  // A defined balance loss of the attention is appended to `balance_losses`.
  ag::Variable forward(const ag::Variable& x, std::vector<ag::Variable>& balance_losses,
                       const Tensor& positions = {}) const;
  // The two halves around the attention call (for callers that run the attention themselves, e.g.
  // with a KV cache): forward(x) = feed_forward(x + attn(attention_input(x)).out).
  ag::Variable attention_input(const ag::Variable& x) const;  // norm1(x)
  ag::Variable feed_forward(const ag::Variable& h) const;     // h + mlp(norm2(h))

  std::shared_ptr<Module> norm1, norm2;      // RMSNorm (Llama) or LayerNorm (GPT-2)
  std::shared_ptr<MultiHeadAttention> attn;  // an MoHAttention for MoH blocks
  std::shared_ptr<Module> mlp;               // SwiGLU (Llama) or Mlp with GELU(tanh) (GPT-2)
};

struct LlmOutput {
  ag::Variable logits;                       // [B, T, V]
  std::vector<ag::Variable> balance_losses;  // one per MoH block with routed_topk > 0, training only
};

class LanguageModel : public Module {
 public:
  LanguageModel(const LlmOptions& options, Generator& gen);
  std::string type_name() const override { return "LanguageModel"; }
  std::string extra_repr() const override;
  // GPT-2's pos_embed table; never tok_embed (tied or not, as nanoGPT decays it).
  std::vector<std::string> no_weight_decay() const override;

  // tokens int64 [B, T] on the model's device, 0 < T <= max_seq_len, ids in [0, vocab_size).
  LlmOutput forward(const Tensor& tokens) const;
  // Decoding: tokens int64 [B, Tnew] at positions [L, L + Tnew), L = cache.length() (RoPE angles and
  // GPT-2 position rows offset by L), through every block's KV cache (models/llm/llm_cache.h) ->
  // logits [B, Tnew, V], equal to those rows of forward() over the whole sequence. Values only (no
  // tape); L + Tnew must fit the cache.
  Tensor forward_cached(const Tensor& tokens, LlmCache& cache) const;
  // The pieces forward chains (for callers that run the blocks themselves, e.g. with a KV cache):
  // token (+ position, GPT-2) embeddings of tokens at positions start .. start + T - 1 -> [B, T, dim],
  // and the final norm and output head -> logits [B, T, V].
  ag::Variable embed(const Tensor& tokens, int64_t start = 0) const;
  ag::Variable logits(const ag::Variable& x) const;

  // The resolved options (defaults filled in, see llm_options.h).
  const LlmOptions& options() const { return options_; }

  // Model FLOPs per token of one training step (forward + backward = 3x forward) at sequence length
  // T, counted as 2 x multiply-adds of the matmuls (projections, MoH gates, MLP, output head; not
  // the embedding lookups) plus the attention scores and their weighted sum over all T keys (PaLM
  // and nanoGPT's MFU convention: no discount for the causal mask). dense: every head computes every
  // token; active: a (token, head) pair MoH skips loses its query projection, score and value rows
  // and its slice of the output projection (keys and values are computed for every head).
  struct Flops {
    double dense = 0, active = 0;
  };
  Flops flops_per_token(int64_t seq_len) const;

  std::shared_ptr<Embedding> tok_embed;
  std::shared_ptr<Embedding> pos_embed;  // GPT-2 only
  std::vector<std::shared_ptr<LlmBlock>> blocks;
  std::shared_ptr<Module> norm;     // RMSNorm or LayerNorm
  std::shared_ptr<Linear> lm_head;  // null when tied

 private:
  void init_weights(Generator& gen);

  LlmOptions options_;
};

}  // namespace moh
