// The `llm` task family: next-token language modelling with a LanguageModel (models/llm, LLaMA- or
// GPT-2-style, MHA or MoH per block) on llm.c token shards (data/text). Training draws random windows
// of data.seq_len + 1 tokens; evaluation reads the validation shards in order and reports the loss,
// perplexity and bits per byte of the decoded text (data.tokenizer). train.log / metrics.jsonl carry
// the MoH active-head share and the model FLOPs per token (dense and active) beside tokens/s.
#pragma once

#include <cstdint>

#include "models/llm/language_model.h"
#include "trainers/task.h"

namespace moh {

TaskFamily llm_task_family();

// The model options a validated llm config describes (preset, then the model.* overrides, then the
// attention spec) for a tokenizer of `tokenizer_vocab` ids; ConfigErrors name the key. Used by the
// task and by `moh generate`, which rebuilds the model of a run from its stored config.
LlmOptions llm_options_from_config(const Config& cfg, int64_t tokenizer_vocab);

}  // namespace moh
