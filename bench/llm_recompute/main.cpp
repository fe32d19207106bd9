// moh_bench_llm_recompute: what activation recomputation (model.recompute, ag::checkpoint) costs and
// saves for a LanguageModel preset: one training step (forward, cross-entropy to random targets plus
// 0.01 x the balance losses, backward; no optimizer) on random tokens, without and with recompute.
// Reported per mode: the CPU allocator's peak bytes above what the model and data hold before the
// step (activations and gradients), the median step time over --steps after one warm-up step, and
// the tokens per second; then the peak ratio. Peak bytes are the allocator's exact count, so they do
// not depend on the machine; the times do.
// Usage: moh_bench_llm_recompute [--preset kjv_tiny] [--vocab 74] [--batch 8] [--seq 256] [--steps 3]
//                                [--shared 1 --topk 2]   (MoH in every block; default MHA)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "core/allocator.h"
#include "core/factory.h"
#include "core/random.h"
#include "models/llm/language_model.h"

namespace moh {
namespace {

struct Args {
  std::string preset = "kjv_tiny";
  int64_t vocab = 74, batch = 8, seq = 256, steps = 3, shared = -1, topk = -1;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    MOH_CHECK(i + 1 < argc, "moh_bench_llm_recompute: ", arg, " needs a value");
    const std::string value = argv[++i];
    if (arg == "--preset") {
      a.preset = value;
      continue;
    }
    const int64_t v = std::stoll(value);
    MOH_CHECK(v >= 0, "moh_bench_llm_recompute: ", arg, " must be >= 0, got ", v);
    if (arg == "--vocab") a.vocab = v;
    else if (arg == "--batch") a.batch = v;
    else if (arg == "--seq") a.seq = v;
    else if (arg == "--steps") a.steps = v;
    else if (arg == "--shared") a.shared = v;
    else if (arg == "--topk") a.topk = v;
    else MOH_FAIL("moh_bench_llm_recompute: unknown flag ", arg);
  }
  MOH_CHECK(a.batch > 0 && a.seq > 0 && a.steps > 0, "moh_bench_llm_recompute: --batch, --seq and --steps must be positive");
  MOH_CHECK((a.shared < 0) == (a.topk < 0), "moh_bench_llm_recompute: --shared and --topk go together");
  return a;
}

Tensor random_ids(int64_t count, int64_t vocab, uint64_t seed) {
  Generator gen(seed);
  std::vector<int64_t> ids;
  for (double u : uniform({count}, 0.0, double(vocab), gen, DType::Float64).to_vector<double>())
    ids.push_back(std::min(int64_t(u), vocab - 1));
  return from_vector(ids, {count}, DType::Int64);
}

struct Measured {
  double peak_mib = 0, step_ms = 0;
};

Measured measure(const Args& a, bool recompute) {
  LlmOptions o = llm_preset(a.preset);
  if (a.vocab > 0) o.vocab_size = a.vocab;
  o.max_seq_len = std::max(o.max_seq_len, a.seq);
  if (a.shared >= 0) o.attention.shared_heads = {a.shared}, o.attention.routed_topk = {a.topk};
  o.recompute = recompute;
  Generator gen(1);
  LanguageModel model(o, gen);
  const Tensor tokens = random_ids(a.batch * a.seq, model.options().vocab_size, 2).reshape({a.batch, a.seq});
  const Tensor targets = random_ids(a.batch * a.seq, model.options().vocab_size, 3);
  Allocator& cpu = cpu_allocator();
  std::vector<double> times;
  Measured m;
  for (int64_t step = 0; step <= a.steps; ++step) {
    for (ag::Variable& p : model.parameters()) p.zero_grad();
    cpu.reset_peak();
    const int64_t base = cpu.stats().current_bytes;
    const auto start = std::chrono::steady_clock::now();
    LlmOutput out = model.forward(tokens);
    ag::Variable loss = ag::cross_entropy(ag::reshape(out.logits, {a.batch * a.seq, model.options().vocab_size}),
                                          targets);
    for (const ag::Variable& b : out.balance_losses) loss = ag::add(loss, ag::mul(b, 0.01));
    ag::backward(loss);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (step > 0) times.push_back(ms);  // step 0 warms up
    m.peak_mib = double(cpu.stats().peak_bytes - base) / double(1 << 20);
  }
  std::sort(times.begin(), times.end());
  m.step_ms = times[times.size() / 2];
  return m;
}

}  // namespace
}  // namespace moh

int main(int argc, char** argv) {
  try {
    const moh::Args a = moh::parse(argc, argv);
    std::printf("preset %s, vocab %lld, batch %lld, seq %lld, %s\n", a.preset.c_str(), (long long)a.vocab,
                (long long)a.batch, (long long)a.seq,
                a.shared >= 0 ? moh::str_cat("MoH shared ", a.shared, " topk ", a.topk).c_str() : "MHA");
    std::printf("%-10s %16s %10s %12s\n", "recompute", "peak MiB", "step ms", "tokens/s");
    moh::Measured rows[2];
    for (int r = 0; r < 2; ++r) {
      rows[r] = moh::measure(a, r == 1);
      std::printf("%-10s %16.1f %10.1f %12.0f\n", r == 1 ? "on" : "off", rows[r].peak_mib, rows[r].step_ms,
                  double(a.batch * a.seq) / (rows[r].step_ms / 1000.0));
    }
    std::printf("peak ratio on/off: %.3f, time ratio on/off: %.3f\n", rows[1].peak_mib / rows[0].peak_mib,
                rows[1].step_ms / rows[0].step_ms);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moh_bench_llm_recompute: %s\n", e.what());
    return 2;
  }
}
