// LanguageModel and LlmBlock: construction in checkpoint order, GPT-2-style init, forward, FLOPs.
#include "models/llm/language_model.h"

#include <cmath>

#include "autograd/autograd.h"
#include "autograd/checkpoint.h"
#include "core/factory.h"
#include "core/ops.h"
#include "layers/init.h"
#include "layers/module_list.h"
#include "layers/mlp.h"
#include "layers/norm.h"

namespace moh {
namespace {

constexpr double kInitStd = 0.02;

bool is_llama(const LlmOptions& o) { return o.arch == LlmOptions::Arch::Llama; }

std::shared_ptr<Module> make_norm(const LlmOptions& o) {
  if (is_llama(o)) return std::make_shared<RMSNorm>(RMSNormOptions{o.dim, o.norm_eps, o.dtype});
  return std::make_shared<LayerNorm>(LayerNormOptions{o.dim, o.norm_eps, true, o.dtype});
}

ag::Variable apply_norm(const Module& norm, const ag::Variable& x) {
  if (const auto* rms = dynamic_cast<const RMSNorm*>(&norm)) return rms->forward(x);
  return dynamic_cast<const LayerNorm&>(norm).forward(x);
}

std::shared_ptr<Module> make_mlp(const LlmOptions& o, Generator& gen) {
  if (is_llama(o)) {
    SwiGLUOptions s;
    s.in_features = o.dim, s.hidden_features = o.mlp_hidden, s.bias = false;
    s.init = WeightInit::Normal, s.init_std = kInitStd, s.dtype = o.dtype;
    return std::make_shared<SwiGLU>(s, gen);
  }
  MlpOptions m;
  m.in_features = o.dim, m.hidden_features = o.mlp_hidden, m.act = Activation::GeluTanh, m.bias = true;
  m.init = WeightInit::Normal, m.init_std = kInitStd, m.dtype = o.dtype;
  return std::make_shared<Mlp>(m, gen);
}

ag::Variable apply_mlp(const Module& mlp, const ag::Variable& x) {
  if (const auto* swiglu = dynamic_cast<const SwiGLU*>(&mlp)) return swiglu->forward(x);
  return dynamic_cast<const Mlp&>(mlp).forward(x);
}

AttentionOptions attention_options(const LlmOptions& o) {
  AttentionOptions a;
  a.dim = o.dim;
  a.num_heads = o.heads;
  a.head_dim = o.head_dim;
  a.num_kv_heads = o.kv_heads;
  a.qkv_bias = a.proj_bias = !is_llama(o);
  a.causal = true;
  a.rope_theta = is_llama(o) ? o.rope_theta : 0.0;
  a.max_positions = o.max_seq_len;
  a.init = WeightInit::Normal;
  a.init_std = kInitStd;
  a.dtype = o.dtype;
  return a;
}

// The residual-stream projections GPT-2 initialises at std / sqrt(2 * depth).
bool is_residual_projection(const std::string& block_param) {
  return block_param == "attn.proj.weight" || block_param == "mlp.fc2.weight" || block_param == "mlp.w2.weight";
}

// MoH's gate matrices (router, shared_gate, stage_gate): every matrix of an attention layer but qkv and proj.
bool is_gate_matrix(const std::string& attn_param, const ag::Variable& p) {
  return p.dim() == 2 && !attn_param.starts_with("qkv.") && !attn_param.starts_with("proj.");
}

// block->forward under ag::checkpoint: outputs [x, balance losses...].
ag::Variable recomputed_block(const std::shared_ptr<LlmBlock>& block, const ag::Variable& x,
                              std::vector<ag::Variable>& balance_losses) {
  const std::vector<ag::Variable> out = ag::checkpoint(
      [block](const std::vector<ag::Variable>& in) {
        std::vector<ag::Variable> outputs(1);
        std::vector<ag::Variable> losses;
        outputs[0] = block->forward(in[0], losses);
        outputs.insert(outputs.end(), losses.begin(), losses.end());
        return outputs;
      },
      {x}, block->parameters());
  balance_losses.insert(balance_losses.end(), out.begin() + 1, out.end());
  return out[0];
}

}  // namespace

LlmBlock::LlmBlock(const LlmOptions& o, int64_t index, Generator& gen) {
  norm1 = register_module("norm1", make_norm(o));
  attn = register_module("attn", make_block_attention(o.attention, index, o.depth, attention_options(o), gen));
  norm2 = register_module("norm2", make_norm(o));
  mlp = register_module("mlp", make_mlp(o, gen));
}

ag::Variable LlmBlock::forward(const ag::Variable& x, std::vector<ag::Variable>& balance_losses,
                               const Tensor& positions) const {
  AttentionOutput a = attn->forward(attention_input(x), positions);
  if (a.balance_loss.defined()) balance_losses.push_back(a.balance_loss);
  return feed_forward(ag::add(x, a.out));
}

ag::Variable LlmBlock::attention_input(const ag::Variable& x) const { return apply_norm(*norm1, x); }

ag::Variable LlmBlock::feed_forward(const ag::Variable& h) const {
  return ag::add(h, apply_mlp(*mlp, apply_norm(*norm2, h)));
}

LanguageModel::LanguageModel(const LlmOptions& options, Generator& gen) : options_(resolved(options)) {
  const LlmOptions& o = options_;
  tok_embed = register_module("tok_embed", std::make_shared<Embedding>(
                                               EmbeddingOptions{o.vocab_size, o.dim, kInitStd, o.dtype}, gen));
  if (!is_llama(o))
    pos_embed = register_module("pos_embed", std::make_shared<Embedding>(
                                                 EmbeddingOptions{o.max_seq_len, o.dim, kInitStd, o.dtype}, gen));
  auto list = register_module("blocks", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < o.depth; ++i) blocks.push_back(list->add(std::make_shared<LlmBlock>(o, i, gen)));
  norm = register_module("norm", make_norm(o));
  if (!o.tie_embeddings)
    lm_head = register_module("lm_head", std::make_shared<Linear>(LinearOptions{o.dim, o.vocab_size, false,
                                                                              WeightInit::Normal, kInitStd,
                                                                              o.dtype},
                                                                gen));
  init_weights(gen);
}

void LanguageModel::init_weights(Generator& gen) {
  // The layers drew N(0, 0.02) (embeddings, projections, MLP, head); the MoH gate layers drew their own
  // truncated normal and are redrawn; the residual projections are scaled to N(0, 0.02 / sqrt(2 depth)).
  const double residual_scale = 1.0 / std::sqrt(2.0 * double(options_.depth));
  for (const auto& block : blocks) {
    for (const auto& [name, p] : block->attn->named_parameters())
      if (is_gate_matrix(name, p)) init::normal(p, gen, kInitStd);
    for (const auto& [name, p] : block->named_parameters())
      if (is_residual_projection(name)) {
        Tensor data = p.data();
        mul_(data, residual_scale);
      }
  }
}

std::string LanguageModel::extra_repr() const {
  const LlmOptions& o = options_;
  std::string s = str_cat(arch_name(o.arch), ", vocab=", o.vocab_size, ", dim=", o.dim, ", depth=", o.depth,
                          ", heads=", o.heads);
  if (o.kv_heads != o.heads) s += str_cat(", kv_heads=", o.kv_heads);
  s += str_cat(", ctx=", o.max_seq_len, o.tie_embeddings ? ", tied" : ", untied", o.recompute ? ", recompute" : "");
  return s;
}

std::vector<std::string> LanguageModel::no_weight_decay() const {
  if (pos_embed) return {"pos_embed.weight"};
  return {};
}

ag::Variable LanguageModel::embed(const Tensor& tokens, int64_t start) const {
  const LlmOptions& o = options_;
  MOH_CHECK(tokens.defined() && tokens.dtype() == DType::Int64 && tokens.dim() == 2,
            "LanguageModel: expected int64 tokens [B, T], got ", describe(tokens));
  const int64_t t = tokens.size(1);
  MOH_CHECK(t > 0 && start >= 0 && start + t <= o.max_seq_len, "LanguageModel: positions ", start, " .. ",
            start + t - 1, " of tokens ", describe(tokens), " exceed max_seq_len ", o.max_seq_len);
  MOH_CHECK(tokens.device() == tok_embed->weight().device(), "LanguageModel: tokens on ", tokens.device(),
            ", the model on ", tok_embed->weight().device());
  ag::Variable x = tok_embed->forward(tokens);
  if (pos_embed) x = ag::add(x, pos_embed->forward(arange(double(start), double(start + t), 1, DType::Int64,
                                                          tokens.device())));
  return x;
}

ag::Variable LanguageModel::logits(const ag::Variable& x) const {
  ag::Variable h = apply_norm(*norm, x);
  return lm_head ? lm_head->forward(h) : linear(h, tok_embed->weight(), ag::Variable());
}

LlmOutput LanguageModel::forward(const Tensor& tokens) const {
  LlmOutput out;
  ag::Variable x = embed(tokens);
  for (const auto& block : blocks)
    x = options_.recompute ? recomputed_block(block, x, out.balance_losses) : block->forward(x, out.balance_losses);
  out.logits = logits(x);
  return out;
}

Tensor LanguageModel::forward_cached(const Tensor& tokens, LlmCache& cache) const {
  MOH_CHECK(cache.depth() == blocks.size(), "LanguageModel::forward_cached: the cache has ", cache.depth(),
            " layers, the model ", blocks.size(), " blocks");
  ag::NoGradGuard no_grad;
  ag::Variable x = embed(tokens, cache.length());
  for (size_t i = 0; i < blocks.size(); ++i) {
    const LlmBlock& block = *blocks[i];
    x = block.feed_forward(ag::add(x, block.attn->forward_cached(block.attention_input(x), cache.layer(i)).out));
  }
  return logits(x).data();
}

LanguageModel::Flops LanguageModel::flops_per_token(int64_t seq_len) const {
  MOH_CHECK(seq_len > 0, "LanguageModel::flops_per_token: seq_len must be positive, got ", seq_len);
  const LlmOptions& o = options_;
  const double d = double(o.dim), t = double(seq_len);
  const double mlp = (is_llama(o) ? 3.0 : 2.0) * 2 * d * double(o.mlp_hidden);
  Flops f;
  for (int64_t b = 0; b < o.depth; ++b) {
    const AttentionOptions& a = blocks[size_t(b)]->attn->options();  // the block's heads (attention.heads)
    const double heads = double(a.num_heads), dh = double(a.head_dim);
    // Per head and token: its query rows and output-projection slice, and its scores and weighted values.
    const double per_head = 2 * d * dh + 2 * dh * d + 4 * t * dh;
    const double kv = 2 * d * 2 * double(a.num_kv_heads) * dh;
    double gates = 0, active_heads = heads;
    if (const std::optional<MoHOptions> moh = o.attention.block(b, o.depth)) {
      const auto& layer = dynamic_cast<const MoHAttention&>(*blocks[size_t(b)]->attn);
      for (const auto& [name, p] : layer.named_parameters())
        if (is_gate_matrix(name, p)) gates += 2 * double(p.numel());
      if (moh->routed_topk > 0) active_heads = double(moh->shared_heads + moh->routed_topk);
    }
    const double common = kv + mlp + gates;
    f.dense += common + heads * per_head;
    f.active += common + active_heads * per_head;
  }
  const double head = 2 * d * double(o.vocab_size);
  f.dense = 3 * (f.dense + head);
  f.active = 3 * (f.active + head);
  return f;
}

}  // namespace moh
