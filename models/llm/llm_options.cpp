// LlmOptions: defaults per architecture, the checks a model runs before allocating, and the presets.
#include "models/llm/llm_options.h"

#include "core/error.h"

namespace moh {
namespace {

// Meta's LLaMA FeedForward: hidden = int(2 * 4 * dim / 3), rounded up to a multiple of 256.
int64_t llama_mlp_hidden(int64_t dim) {
  constexpr int64_t kMultipleOf = 256;
  const int64_t hidden = 2 * (4 * dim) / 3;
  return kMultipleOf * ((hidden + kMultipleOf - 1) / kMultipleOf);
}

}  // namespace

const char* arch_name(LlmOptions::Arch arch) {
  switch (arch) {
    case LlmOptions::Arch::Llama: return "llama";
    case LlmOptions::Arch::Gpt2: return "gpt2";
  }
  MOH_FAIL("arch_name: unknown LlmOptions::Arch ", int(arch));
}

LlmOptions resolved(const LlmOptions& options) {
  LlmOptions o = options;
  const bool llama = o.arch == LlmOptions::Arch::Llama;
  MOH_CHECK(o.vocab_size > 0, "LanguageModel: vocab_size must be positive, got ", o.vocab_size,
            " (kjv_tiny leaves it to the task's tokenizer)");
  MOH_CHECK(o.dim > 0 && o.depth > 0 && o.heads > 0 && o.max_seq_len > 0,
            "LanguageModel: dim, depth, heads and max_seq_len must be positive, got ", o.dim, ", ", o.depth, ", ",
            o.heads, ", ", o.max_seq_len);
  MOH_CHECK(o.kv_heads >= 0 && o.head_dim >= 0 && o.mlp_hidden >= 0,
            "LanguageModel: kv_heads, head_dim and mlp_hidden must be >= 0 (0 = default), got ", o.kv_heads, ", ",
            o.head_dim, ", ", o.mlp_hidden);
  if (o.kv_heads == 0) o.kv_heads = o.heads;
  MOH_CHECK(o.kv_heads <= o.heads && o.heads % o.kv_heads == 0, "LanguageModel: kv_heads ", o.kv_heads,
            " must divide heads ", o.heads, " (grouped-query attention shares each key/value head among ",
            "heads / kv_heads query heads)");
  if (o.head_dim == 0) {
    MOH_CHECK(o.dim % o.heads == 0, "LanguageModel: dim ", o.dim, " is not a multiple of heads ", o.heads,
              " (set head_dim explicitly)");
    o.head_dim = o.dim / o.heads;
  }
  if (o.mlp_hidden == 0) o.mlp_hidden = llama ? llama_mlp_hidden(o.dim) : 4 * o.dim;
  MOH_CHECK(!llama || o.rope_theta > 0, "LanguageModel: rope_theta must be positive, got ", o.rope_theta);
  MOH_CHECK(!llama || o.head_dim % 2 == 0, "LanguageModel: RoPE needs an even head_dim, got ", o.head_dim);
  MOH_CHECK(o.norm_eps > 0, "LanguageModel: norm_eps must be positive, got ", o.norm_eps);
  MOH_CHECK(is_floating(o.dtype), "LanguageModel: dtype must be floating, got ", dtype_name(o.dtype));
  if (!llama) o.tie_embeddings = true;
  o.attention.validate(o.depth, o.heads);
  return o;
}

LlmOptions llm_preset(const std::string& name) {
  LlmOptions o;
  if (name == "kjv_tiny") {
    o.vocab_size = 0, o.dim = 128, o.depth = 4, o.heads = 8, o.mlp_hidden = 384, o.max_seq_len = 256;
    o.tie_embeddings = true;
  } else if (name == "gpt2_124m") {
    o.arch = LlmOptions::Arch::Gpt2;
    o.vocab_size = 50257, o.dim = 768, o.depth = 12, o.heads = 12, o.max_seq_len = 1024;
  } else if (name == "llm_s") {
    o.vocab_size = 32000, o.dim = 768, o.depth = 12, o.heads = 12, o.max_seq_len = 2048;
  } else if (name == "llm_b") {
    o.vocab_size = 32000, o.dim = 1536, o.depth = 24, o.heads = 16, o.max_seq_len = 2048;
  } else {
    MOH_FAIL("llm_preset: unknown model '", name, "'; expected kjv_tiny, gpt2_124m, llm_s or llm_b");
  }
  return o;
}

}  // namespace moh
