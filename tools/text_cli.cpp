// `moh tokenize` and `moh tokenizer` (see text_cli.h).
#include "tools/text_cli.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/io/checked_write.h"
#include "data/text/char_tokenizer.h"
#include "data/text/corpus_tokenizer.h"
#include "data/text/sentencepiece_tokenizer.h"
#include "data/text/tokenizer.h"
#include "tools/cli_args.h"
#include "tools/exit_status.h"
#include "tools/progress_line.h"

namespace moh {
namespace {

using cli::Args;
using cli::kOk;
using cli::number;
using cli::required;
using cli::UsageError;

const char* kTokenizeHelp =
    "usage: moh tokenize --tokenizer FILE --out DIR [--val-fraction F] [--threads N] [--shard-tokens N] FILES|DIRS|-\n"
    "Encodes documents (each file is one; folders give their files in name order; - is stdin) into llm.c\n"
    "token shards DIR/train_000000.bin, ... and DIR/val_000000.bin, ... (the last F of the documents), each\n"
    "document preceded by the end-of-text token, plus DIR/meta.json. --threads workers (default 1) encode\n"
    "documents in parallel; --shard-tokens (default 100000000) caps a shard. Progress goes to stderr,\n"
    "one JSON summary line to stdout. See docs/text.md.\n";

const char* kTokenizerHelp =
    "usage: moh tokenizer encode|decode|info --tokenizer FILE [--whole] [--allow-special]\n"
    "       moh tokenizer train [--kind sentencepiece] --vocab-size N --out FILE.model [--threads N] FILES|DIRS\n"
    "       moh tokenizer train --kind char --out FILE.json FILES|DIRS\n"
    "  encode: text on stdin -> one line of space-separated ids per input line (the newline not encoded);\n"
    "          --whole encodes all of stdin as one document into one line; --allow-special turns special\n"
    "          tokens written in the text (<|endoftext|>) into their ids, otherwise they are ordinary text\n"
    "  decode: lines of space-separated ids on stdin -> their text, one line each (--whole: no newlines added)\n"
    "  info:   the tokenizer's kind, vocabulary size and special tokens, as JSON\n"
    "  train:  a SentencePiece BPE model with byte fallback (LLaMA-2 style) on text files, one sentence a\n"
    "          line, or (--kind char) a character-level vocabulary of the files' characters\n"
    "FILE is a tiktoken ranks file (.tiktoken, optionally .gz), an HF tokenizer.json, a SentencePiece .model\n"
    "or a character tokenizer's JSON, recognised by content. See docs/text.md.\n";

int tokenize(int argc, char** argv) {
  const Args args = cli::parse_args(argc, argv, 2, {"--tokenizer", "--out", "--val-fraction", "--threads", "--shard-tokens"}, {});
  if (args.help) {
    std::cout << kTokenizeHelp;
    return kOk;
  }
  text::TokenizeOptions options;
  const std::string tokenizer_path = required(args, "--tokenizer", kTokenizeHelp);
  options.out_dir = required(args, "--out", kTokenizeHelp);
  options.val_fraction = number(args, "--val-fraction", 0.0);
  options.threads = number(args, "--threads", 1);
  options.shard_tokens = number<int64_t>(args, "--shard-tokens", options.shard_tokens);
  if (args.positional.empty()) throw UsageError(str_cat("no input documents\n", kTokenizeHelp));
  if (options.val_fraction < 0 || options.val_fraction >= 1)
    throw UsageError(str_cat("--val-fraction must be in [0, 1), got ", options.val_fraction));
  if (options.threads < 1) throw UsageError(str_cat("--threads must be at least 1, got ", options.threads));
  const std::vector<std::string> documents = text::expand_document_paths(args.positional);
  const auto tokenizer = text::load_tokenizer(tokenizer_path);
  cli::ProgressLine progress("tokenize", int64_t(documents.size()), "documents");
  const text::TokenizeResult result = text::tokenize_corpus(*tokenizer, documents, options, [&](const text::TokenizeProgress& p) {
    progress.update(p.documents_done, str_cat(", ", cli::format_fixed(double(p.bytes) / 1e6, 1), " MB, ", p.tokens, " tokens, ",
                                              cli::format_fixed(double(p.bytes) / 1e6 / std::max(p.seconds, 1e-9), 1), " MB/s"));
  });
  const nlohmann::json summary{{"out", options.out_dir},
                               {"documents", result.documents},
                               {"bytes", result.bytes},
                               {"train_tokens", result.train_tokens},
                               {"val_tokens", result.val_tokens},
                               {"shards", result.shards.size()},
                               {"seconds", result.seconds},
                               {"mb_per_s", double(result.bytes) / 1e6 / std::max(result.seconds, 1e-9)}};
  std::cout << summary.dump() << std::endl;
  return kOk;
}

std::string join_ids(const std::vector<text::TokenId>& ids) {
  std::string line;
  for (size_t k = 0; k < ids.size(); ++k) {
    if (k) line += ' ';
    line += std::to_string(ids[k]);
  }
  return line;
}

std::vector<text::TokenId> parse_ids(const std::string& line, size_t line_number) {
  std::vector<text::TokenId> ids;
  size_t at = 0;
  while (true) {
    at = line.find_first_not_of(" \t\r", at);
    if (at == std::string::npos) break;
    const size_t end = std::min(line.find_first_of(" \t\r", at), line.size());
    text::TokenId id = 0;
    const auto [stop, ec] = std::from_chars(line.data() + at, line.data() + end, id);
    MOH_CHECK(ec == std::errc() && stop == line.data() + end, "stdin line ", line_number, ": '",
              line.substr(at, end - at), "' is not a token id");
    ids.push_back(id);
    at = end;
  }
  return ids;
}

int train_char(const Args& args) {
  const std::string out = required(args, "--out", kTokenizerHelp);
  if (args.options.count("--vocab-size")) throw UsageError("--vocab-size does not apply to --kind char");
  std::vector<std::string> inputs(args.positional.begin() + 1, args.positional.end());
  if (inputs.empty()) throw UsageError(str_cat("no training text files\n", kTokenizerHelp));
  const text::CharTokenizer tokenizer = text::train_char_tokenizer(text::expand_document_paths(inputs), out);
  write_file_atomically(out, tokenizer.to_json());
  std::cout << nlohmann::json{{"model", out}, {"vocab_size", tokenizer.vocab_size()}}.dump() << std::endl;
  return kOk;
}

int train_tokenizer(const Args& args) {
  const std::string kind = args.options.count("--kind") ? args.options.at("--kind") : "sentencepiece";
  if (kind == "char") return train_char(args);
  if (kind != "sentencepiece") throw UsageError(str_cat("--kind must be sentencepiece or char, got '", kind, "'"));
  text::SentencePieceTraining training;
  training.model_path = required(args, "--out", kTokenizerHelp);
  training.vocab_size = number(args, "--vocab-size", 0);
  training.threads = number(args, "--threads", 1);
  if (!args.options.count("--vocab-size")) throw UsageError(str_cat("missing --vocab-size\n", kTokenizerHelp));
  if (training.threads < 1) throw UsageError(str_cat("--threads must be at least 1, got ", training.threads));
  training.inputs.assign(args.positional.begin() + 1, args.positional.end());
  if (training.inputs.empty()) throw UsageError(str_cat("no training text files\n", kTokenizerHelp));
  training.inputs = text::expand_document_paths(training.inputs);
  text::train_sentencepiece(training);
  const auto tokenizer = text::load_tokenizer(training.model_path);
  std::cout << nlohmann::json{{"model", training.model_path}, {"vocab_size", tokenizer->vocab_size()}}.dump() << std::endl;
  return kOk;
}

int tokenizer_command(int argc, char** argv) {
  const Args args = cli::parse_args(argc, argv, 2, {"--tokenizer", "--out", "--vocab-size", "--threads", "--kind"},
                          {"--whole", "--allow-special"});
  if (args.help || args.positional.empty()) {
    if (!args.help) throw UsageError(str_cat("missing subcommand\n", kTokenizerHelp));
    std::cout << kTokenizerHelp;
    return kOk;
  }
  const std::string sub = args.positional[0];
  if (sub != "encode" && sub != "decode" && sub != "info" && sub != "train")
    throw UsageError(str_cat("unknown subcommand '", sub, "'\n", kTokenizerHelp));
  if (sub == "train") return train_tokenizer(args);
  if (args.positional.size() > 1) throw UsageError(str_cat("unexpected argument '", args.positional[1], "'"));
  const auto tokenizer = text::load_tokenizer(required(args, "--tokenizer", kTokenizerHelp));
  const bool whole = args.options.count("--whole") > 0;
  if (sub == "info") {
    const nlohmann::json info{{"tokenizer", tokenizer->description()},
                              {"vocab_size", tokenizer->vocab_size()},
                              {"special_tokens", tokenizer->special_tokens()}};
    std::cout << info.dump() << std::endl;
    return kOk;
  }
  std::ios::sync_with_stdio(false);
  if (sub == "encode") {
    const auto encode = [&](std::string_view text) {
      return args.options.count("--allow-special") ? tokenizer->encode(text, text::AllowedSpecial::all())
                                                   : tokenizer->encode_ordinary(text);
    };
    if (whole) {
      const std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
      std::cout << join_ids(encode(text)) << "\n";
    } else {
      for (std::string line; std::getline(std::cin, line);) std::cout << join_ids(encode(line)) << "\n";
    }
  } else {
    size_t line_number = 0;
    for (std::string line; std::getline(std::cin, line);)
      std::cout << tokenizer->decode(parse_ids(line, ++line_number)) << (whole ? "" : "\n");
  }
  std::cout.flush();
  MOH_CHECK(std::cout, "writing stdout failed");
  return kOk;
}

}  // namespace

bool is_text_command(const std::string& command) { return command == "tokenize" || command == "tokenizer"; }

int run_text_command(int argc, char** argv) {
  return cli::exit_status_of(str_cat("moh ", argv[1]), [&] {
    return std::string(argv[1]) == "tokenize" ? tokenize(argc, argv) : tokenizer_command(argc, argv);
  });
}

}  // namespace moh
