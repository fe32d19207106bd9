// `moh generate` (see generate_cli.h): opens the run's newest checkpoint and tokenizer, encodes the
// prompt, generates with the KV cache (models/llm/generation.h) and streams the new text to stdout
// as it is drawn, holding back only a UTF-8 character whose bytes span two tokens; the last stderr
// line gives the speed.
#include "tools/generate_cli.h"

#include <cstdio>
#include <iostream>
#include <string>

#include "data/text/tokenizer.h"
#include "data/text/utf8.h"
#include "layers/module.h"
#include "models/llm/generation.h"
#include "trainers/config.h"
#include "trainers/llm_task.h"
#include "tools/cli_args.h"
#include "tools/exit_status.h"
#include "trainers/stored_run.h"

namespace moh {
namespace {

using cli::kOk;
using cli::UsageError;

const char* kGenerateHelp =
    "usage: moh generate RUN_DIR|CHECKPOINT --prompt TEXT [--max-tokens N] [--temperature T] [--top-k K]\n"
    "                    [--top-p P] [--seed S] [key=value ...]\n"
    "Continues TEXT with the language model of an llm run (the newest valid checkpoint of RUN_DIR, or the\n"
    "given .h5 file), encoded with the run's tokenizer (data.tokenizer of the stored config; overrides\n"
    "apply to that config). The new text streams to stdout as it is drawn (the prompt is not repeated),\n"
    "ending with a newline; generation stops after --max-tokens tokens (default 256), at the\n"
    "end-of-text token or when the context reaches model.max_seq_len. Sampling: --temperature (default\n"
    "0.8; 0 = greedy), --top-k (default 200; 0 = off), --top-p (default 1 = off); --seed (default 1)\n"
    "gives the same text on every run. The last line on stderr gives the token rate. An empty prompt\n"
    "starts from the end-of-text token. See docs/llm.md (Generation).\n";

// Writes the decoded bytes of each token as they come, complete UTF-8 characters only.
class TextStream {
 public:
  explicit TextStream(const text::Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
  void add(int64_t token) {
    const text::TokenId id = text::TokenId(token);
    pending_ += tokenizer_.decode({&id, 1});
    write(text::utf8_complete_prefix(pending_));
  }
  void finish() {
    write(pending_.size());
    write_bytes("\n");
  }

 private:
  void write(size_t bytes) {
    write_bytes(pending_.substr(0, bytes));
    pending_.erase(0, bytes);
  }
  static void write_bytes(const std::string& bytes) {
    if (bytes.empty()) return;
    MOH_CHECK(std::fwrite(bytes.data(), 1, bytes.size(), stdout) == bytes.size() && std::fflush(stdout) == 0,
              "moh generate: writing stdout failed");
  }
  const text::Tokenizer& tokenizer_;
  std::string pending_;
};

GenerationOptions generation_options(const cli::Args& args) {
  GenerationOptions o;
  o.max_new_tokens = cli::number<int64_t>(args, "--max-tokens", 256);
  o.sampler.temperature = cli::number(args, "--temperature", 0.8);
  o.sampler.top_k = cli::number<int64_t>(args, "--top-k", 200);
  o.sampler.top_p = cli::number(args, "--top-p", 1.0);
  o.seed = cli::number<uint64_t>(args, "--seed", 1);
  if (o.max_new_tokens < 1) throw UsageError(str_cat("--max-tokens must be at least 1, got ", o.max_new_tokens));
  try {
    validate(o.sampler);
  } catch (const Error& e) {
    throw UsageError(e.what());  // "sampler: temperature must be >= 0, got -1"
  }
  return o;
}

int generate_command(int argc, char** argv) {
  const cli::Args args = cli::parse_args(
      argc, argv, 2, {"--prompt", "--max-tokens", "--temperature", "--top-k", "--top-p", "--seed"}, {});
  if (args.help) {
    std::cout << kGenerateHelp;
    return kOk;
  }
  const auto [target, overrides] = cli::target_and_overrides(args, kGenerateHelp);
  const std::string prompt = cli::required(args, "--prompt", kGenerateHelp);
  GenerationOptions options = generation_options(args);

  const StoredRun run = open_stored_run(target, overrides, "moh generate");
  require_task(run, "llm", "moh generate", "a run of the llm task");
  const auto tokenizer = text::load_tokenizer(run.config.get_string("data.tokenizer"));
  Generator init(0);  // the weights are the checkpoint's
  LanguageModel model(llm_options_from_config(run.config, tokenizer->vocab_size()), init);
  model.load_state_dict(weights_to_evaluate(run));
  model.eval();

  std::vector<text::TokenId> ids = tokenizer->encode_ordinary(prompt);
  if (ids.empty()) {
    if (!tokenizer->end_of_text())
      throw UsageError("the prompt is empty and the run's tokenizer has no end-of-text token to start from");
    ids.push_back(*tokenizer->end_of_text());
  }
  if (tokenizer->end_of_text()) options.stop_token = *tokenizer->end_of_text();
  TextStream stream(*tokenizer);
  const GenerationResult result = generate(model, std::vector<int64_t>(ids.begin(), ids.end()), options,
                                           [&](int64_t token) { stream.add(token); });
  stream.finish();
  std::fprintf(stderr,
               "moh generate: %zu tokens (prompt %zu tokens, prefill %.3f s), %.1f tokens/s after the first; "
               "stopped: %s\n",
               result.tokens.size(), ids.size(), result.prefill_seconds,
               result.decode_seconds > 0 ? double(result.decode_steps) / result.decode_seconds : 0.0,
               stop_reason_name(result.stop));
  return kOk;
}

}  // namespace

int run_generate_command(int argc, char** argv) {
  return cli::exit_status_of("moh generate", [&] { return generate_command(argc, argv); });
}

}  // namespace moh
