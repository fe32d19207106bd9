// tokenize_corpus: text documents -> llm.c token shards, what `moh tokenize` runs. Each document is
// one input file (or stdin) and is preceded by the tokenizer's end-of-text token, as llm.c's data
// scripts do, so every document boundary is marked and a shard can start anywhere. Documents are
// encoded as ordinary text (special-token strings in a corpus are text) by `threads` workers in
// parallel and written strictly in input order, so the shards do not depend on the thread count.
// The last round(val_fraction * N) documents (at least one when val_fraction > 0) go to validation.
// Output, in an empty or shard-free folder: train_000000.bin, ... and val_000000.bin, ... of at
// most shard_tokens tokens each (uint16 when the vocabulary fits, else uint32), and meta.json
// describing the tokenizer and the counts. A failed run leaves no shard of its own behind.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/text/tokenizer.h"

namespace moh::text {

struct TokenizeOptions {
  std::string out_dir;
  double val_fraction = 0.0;
  int threads = 1;
  int64_t shard_tokens = 100'000'000;
};

struct TokenizeProgress {
  int64_t documents_done = 0, documents = 0, bytes = 0, tokens = 0;
  double seconds = 0;
};

struct TokenizeResult {
  int64_t documents = 0, bytes = 0, train_tokens = 0, val_tokens = 0;
  std::vector<std::string> shards;
  double seconds = 0;
};

// `documents` are file paths, "-" for stdin. `progress` (optional) is called from the writing
// thread after each document.
TokenizeResult tokenize_corpus(const Tokenizer& tokenizer, const std::vector<std::string>& documents,
                               const TokenizeOptions& options,
                               const std::function<void(const TokenizeProgress&)>& progress = {});

// The documents named on a command line: files as given, folders expanded to their regular files
// (recursively, hidden ones skipped) in name order, "-" kept. An error for a path that does not exist.
std::vector<std::string> expand_document_paths(const std::vector<std::string>& args);

}  // namespace moh::text
