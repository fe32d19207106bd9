// LlmOptions: the shape of a decoder-only language model (models/llm/language_model.h) in one of
// two architectures, and the named presets.
//  Llama: RMSNorm, RoPE (rope_theta), SwiGLU MLP, no biases, optional grouped-query attention and
//         optional tied embeddings.
//  Gpt2:  LayerNorm, a learned position table, GELU(tanh) Mlp with biases, qkv/proj biases, token
//         embedding always tied to the output head.
// Both are pre-norm and causal. A field of 0 takes the architecture's default; resolved() fills
// them in (the model keeps the resolved options) and checks every field before any allocation.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "layers/attention_spec.h"

namespace moh {

struct LlmOptions {
  enum class Arch { Llama, Gpt2 };

  Arch arch = Arch::Llama;
  int64_t vocab_size = 0;  // must be set (kjv_tiny: the task's character vocabulary)
  int64_t dim = 768;
  int64_t depth = 12;
  int64_t heads = 12;
  int64_t kv_heads = 0;    // 0: heads; fewer (dividing heads) = grouped-query attention
  int64_t head_dim = 0;    // 0: dim / heads
  int64_t mlp_hidden = 0;  // 0: Llama 2/3 * 4 * dim rounded up to a multiple of 256 (Meta's LLaMA); Gpt2 4 * dim
  int64_t max_seq_len = 1024;
  double rope_theta = 10000.0;  // Llama only
  double norm_eps = 1e-5;       // RMSNorm (Llama) / LayerNorm (Gpt2)
  bool tie_embeddings = false;  // Llama: logits use tok_embed.weight; Gpt2 always ties (resolved() sets it)
  AttentionSpec attention;      // MHA or MoH per block (layers/attention_spec.h); default MHA everywhere
  bool recompute = false;       // activation checkpointing: each block's forward is rerun in the backward
  DType dtype = DType::Float32;
};

const char* arch_name(LlmOptions::Arch arch);

// The defaults filled in (kv_heads, head_dim, mlp_hidden; tie_embeddings for Gpt2); throws
// moh::Error naming the field on anything a model cannot be built from.
LlmOptions resolved(const LlmOptions& options);

// Named sizes (the caller may change any field afterwards; parameter counts with MHA everywhere):
//  kjv_tiny   Llama, dim 128, depth 4, heads 8 of 16, SwiGLU 384, ctx 256, tied (configs/llm/kjv_*.yaml, the
//             CPU demo); vocab_size 0: the task sets its character vocabulary (853,120 + 128 * vocab
//             parameters: 861,312 at KJV's 64)
//  gpt2_124m  GPT-2 small: vocab 50257, ctx 1024, dim 768, depth 12, heads 12 (124,439,808)
//  llm_s      the MoH paper's LLM-S shape: Llama, dim 768, depth 12, heads 12 of 64, SwiGLU 2048, ctx 2048,
//             LLaMA-2 vocab 32000, untied (134,105,856)
//  llm_b      the MoH paper's LLM-B shape: Llama, dim 1536, depth 24, heads 16 of 96, SwiGLU 4096, ctx 2048,
//             vocab 32000, untied (777,856,512)
// An unknown name throws listing the known ones.
LlmOptions llm_preset(const std::string& name);

}  // namespace moh
