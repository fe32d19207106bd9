// moh_bench_llm_decode: time per generated token of a kjv_tiny-shaped LanguageModel (random
// weights, max_seq_len 1088) at contexts 64 .. 1024, KV-cached decoding (one token's forward plus
// attention over the cache) against a full recompute (a forward over the whole context per token),
// for MHA and MoH with 50% of the heads active (1 shared + 2 of 5 routed, sparse execution).
// Cached: the median over `--steps` single-token steps after a prefill of the context; full: the
// median of `--reps` forwards over the context. Prints a table of medians in ms per token.
// Usage: moh_bench_llm_decode [--contexts 64,128,256,512,1024] [--steps 32] [--reps 3] [--vocab 80]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/tape.h"
#include "core/factory.h"
#include "models/llm/language_model.h"
#include "models/llm/llm_cache.h"

namespace moh {
namespace {

struct Args {
  std::vector<int64_t> contexts{64, 128, 256, 512, 1024};
  int64_t steps = 32, reps = 3, vocab = 80;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    MOH_CHECK(i + 1 < argc, "moh_bench_llm_decode: ", arg, " needs a value (see the file comment)");
    const std::string value = argv[++i];
    if (arg == "--contexts") {
      a.contexts.clear();
      std::stringstream ss(value);
      for (std::string part; std::getline(ss, part, ',');) a.contexts.push_back(std::stoll(part));
    } else if (arg == "--steps") {
      a.steps = std::stoll(value);
    } else if (arg == "--reps") {
      a.reps = std::stoll(value);
    } else if (arg == "--vocab") {
      a.vocab = std::stoll(value);
    } else {
      MOH_FAIL("moh_bench_llm_decode: unknown option '", arg, "'");
    }
  }
  MOH_CHECK(a.steps > 0 && a.reps > 0 && a.vocab > 1 && !a.contexts.empty(),
            "moh_bench_llm_decode: --steps, --reps and --vocab must be positive, --contexts not empty");
  return a;
}

double milliseconds(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Tensor random_tokens(int64_t tokens, int64_t vocab, Generator& gen) {
  std::vector<int64_t> ids;
  for (double u : uniform({tokens}, 0.0, double(vocab), gen, DType::Float64).to_vector<double>())
    ids.push_back(std::min(int64_t(u), vocab - 1));
  return from_vector(ids, {1, tokens}, DType::Int64);
}

struct Timing {
  double cached_ms = 0, full_ms = 0;
};

Timing time_model(const LanguageModel& model, int64_t context, const Args& args) {
  Generator gen(static_cast<uint64_t>(context));
  const Tensor prompt = random_tokens(context, args.vocab, gen);
  Timing t;
  std::vector<double> steps;
  LlmCache cache(model, 1, context + args.steps);
  model.forward_cached(prompt, cache);
  for (int64_t s = 0; s < args.steps; ++s) {
    const Tensor token = random_tokens(1, args.vocab, gen);
    steps.push_back(milliseconds([&] { model.forward_cached(token, cache); }));
  }
  t.cached_ms = median(steps);
  std::vector<double> full;
  for (int64_t r = 0; r < args.reps; ++r) full.push_back(milliseconds([&] { model.forward(prompt); }));
  t.full_ms = median(full);
  return t;
}

int run(int argc, char** argv) {
  const Args args = parse(argc, argv);
  LlmOptions mha = llm_preset("kjv_tiny");
  mha.vocab_size = args.vocab;
  mha.max_seq_len = std::max<int64_t>(1088, *std::max_element(args.contexts.begin(), args.contexts.end()) + args.steps);
  LlmOptions moh = mha;
  moh.attention.shared_heads = {1};
  moh.attention.routed_topk = {2};  // (1 + 2) / 6 heads: 50% active
  moh.attention.execution = MoHExecution::Sparse;
  Generator gen(1);
  LanguageModel mha_model(mha, gen), moh_model(moh, gen);
  mha_model.eval();
  moh_model.eval();
  ag::NoGradGuard no_grad;
  const LlmOptions& o = mha_model.options();
  std::printf("moh_bench_llm_decode: kjv_tiny shape (dim %lld, depth %lld, heads %lld, SwiGLU %lld, vocab %lld, "
              "max_seq_len %lld), batch 1, %d threads; cached: median of %lld steps, full: median of %lld forwards\n",
              (long long)o.dim, (long long)o.depth, (long long)o.heads, (long long)o.mlp_hidden, (long long)o.vocab_size,
              (long long)o.max_seq_len, omp_get_max_threads(), (long long)args.steps, (long long)args.reps);
  std::printf("| context | MHA cached ms/token | MHA full ms/token | MoH-50%% cached ms/token | MoH-50%% full ms/token | "
              "MHA full/cached |\n| ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (int64_t context : args.contexts) {
    const Timing a = time_model(mha_model, context, args), b = time_model(moh_model, context, args);
    std::printf("| %lld | %.2f | %.2f | %.2f | %.2f | %.1fx |\n", (long long)context, a.cached_ms, a.full_ms,
                b.cached_ms, b.full_ms, a.full_ms / a.cached_ms);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace moh

int main(int argc, char** argv) {
  try {
    return moh::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
