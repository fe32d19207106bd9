// A tiny character-level language-modelling corpus and an `llm` run config for tests: sentences from
// a small grammar (learnable in a few dozen steps), a character tokenizer (tokenizer.json) and llm.c
// shards (train_000000.bin, val_000000.bin) in <dir>/corpus, and a config training a 2-block model on
// it into <dir>/runs/<name>.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/text/char_tokenizer.h"
#include "data/text/token_shard.h"
#include "trainers/config.h"
#include "trainers/trainer.h"

namespace moh::test {

// `sentences` sentences of the grammar, separated by spaces; the same for the same seed.
inline std::string grammar_text(int64_t sentences, uint64_t seed) {
  static const std::vector<std::string> subjects{"the king", "a shepherd", "my brother", "the people", "she"};
  static const std::vector<std::string> verbs{"saw", "blessed", "followed", "called", "feared"};
  static const std::vector<std::string> objects{"the city.", "his sheep.", "the river.", "them all.", "the lord."};
  std::string out;
  uint64_t x = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  auto pick = [&](const std::vector<std::string>& words) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return words[(x >> 33) % words.size()];
  };
  for (int64_t i = 0; i < sentences; ++i) out += pick(subjects) + " " + pick(verbs) + " " + pick(objects) + "\n";
  return out;
}

// Writes <dir>/corpus/{tokenizer.json, train_000000.bin, val_000000.bin} (each split one document,
// preceded by the end-of-text id) and returns the corpus folder.
inline std::filesystem::path write_llm_corpus(const std::filesystem::path& dir) {
  const std::filesystem::path corpus = dir / "corpus";
  std::filesystem::create_directories(corpus);
  const std::string train = grammar_text(2000, 1), val = grammar_text(200, 2);
  std::vector<std::string> chars;
  for (char c : train + val)
    if (std::find(chars.begin(), chars.end(), std::string(1, c)) == chars.end()) chars.push_back(std::string(1, c));
  std::sort(chars.begin(), chars.end());
  const text::CharTokenizer tokenizer(chars, "test chars");
  std::ofstream(corpus / "tokenizer.json") << tokenizer.to_json();
  for (const auto& [split, body] : {std::pair{"train", train}, std::pair{"val", val}}) {
    std::vector<text::TokenId> ids{*tokenizer.end_of_text()};
    tokenizer.encode_ordinary_into(body, ids);
    text::write_token_shard((corpus / (std::string(split) + "_000000.bin")).string(), ids,
                            text::token_width_for(tokenizer.vocab_size()));
  }
  return corpus;
}

// An llm run on write_llm_corpus(dir): 2 LLaMA-style blocks of width 32, 4 heads, context 32.
inline Config llm_config(const std::filesystem::path& dir, const std::string& name,
                         const std::vector<std::string>& overrides) {
  const std::filesystem::path corpus = dir / "corpus";
  if (!std::filesystem::exists(corpus / "tokenizer.json")) write_llm_corpus(dir);
  const std::filesystem::path file = dir / (name + ".yaml");
  std::ofstream(file) << "task: llm\n"
                         "run: {name: " << name << ", dir: " << (dir / "runs").string() << ", seed: 2}\n"
                         "train: {steps: 60, batch_size: 8, log_every: 10}\n"
                         "eval: {every: 0, batch_size: 16}\n"
                         "checkpoint: {every: 0}\n"
                         "optim: {name: adamw, lr: 0.01, weight_decay: 0.1}\n"
                         "schedule: {name: cosine, warmup_steps: 5}\n"
                         "data: {dir: " << corpus.string() << ", tokenizer: " << (corpus / "tokenizer.json").string()
                      << ", seq_len: 32}\n"
                         "model: {preset: kjv_tiny, dim: 32, depth: 2, heads: 4, mlp_hidden: 64, max_seq_len: 64}\n"
                         "threads: 2\n";
  return Config::load(file.string(), training_schema("llm"), overrides);
}

}  // namespace moh::test
