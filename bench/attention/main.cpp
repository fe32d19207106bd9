// moh_bench_attention: MHA vs MoH (sparse) forward+backward time in the paper's setting (32 heads
// of 64), at 90%, 75% and 50% of heads active, for two scopes:
//   core  - scores, softmax and weighted values only (routing fixed in advance; the sparse side
//           includes gathering the selected query rows);
//   layer - the whole attention layer with projections and the learned router.
// Prints a table of medians and ratios to MHA (plus the ideal FLOP ratio of the layer), the
// overhead of MoH's dense execution over MHA, and with --json one JSON object as the last line.
// The variants of a scope run interleaved, round by round, and each ratio is the median of the
// per-round ratios, so the drift of a noisy machine falls on every variant alike.
// --scope projections isolates the routed heads' query and output projections (forward + backward,
// the layer's tokens): per-head gathered rows (gather_linear + scatter_linear) against one dense
// GEMM over every routed head, whose ratio has the ideal K / E (share of routed rows computed).
// --scope gqa instead measures grouped-query attention at H / Hkv = 4 (B 8, T 512, 16 query heads
// on 4 K/V heads of 64, causal): one training step (forward + backward) of the attention op on
// K/V repeated to 16 heads by expand + reshape (what the layers did before the op read K/V heads
// in place) and on the 4 heads read in place, and of the whole MultiHeadAttention layer; median
// time and the CPU allocator's peak bytes above what the step's inputs hold.
// --scope profile splits the layer's step (MHA and MoH at each share, Auto projections) into the phases the
// layers mark (autograd/profile.h): routing, projections, attention, row moves and the rest, forward +
// backward, the median of each over the reps.
// --device cuda runs the core, layer and profile scopes on the GPU (inputs, layers and routing there; each
// timed call ends with moh::synchronize). Its profile times every kernel by host clock, so it sets
// MOH_CUDA_SYNC=1 (a synchronisation after each launch): the phases' sum exceeds the unsynchronised step.
// Usage: moh_bench_attention [--seq 256,512] [--tokens 2048] [--layer-tokens 1024] [--reps 3]
//                            [--scope core|layer|both|projections|gqa|profile] [--device cpu|cuda] [--json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograd/autograd.h"
#include "autograd/profile.h"
#include "core/allocator.h"
#include "core/factory.h"
#include "core/ops.h"
#include "layers/moh_attention.h"

namespace moh {
namespace {

constexpr int64_t kHeads = 32, kHeadDim = 64, kDim = kHeads * kHeadDim, kShared = 4;

struct Share {
  const char* name;  // "90", "75", "50"
  int64_t topk;      // routed heads per token: (kShared + topk) / kHeads active
};
const Share kShares[] = {{"90", 25}, {"75", 20}, {"50", 12}};

struct Args {
  std::vector<int64_t> seqs{256, 512};
  int64_t tokens = 2048, layer_tokens = 1024, reps = 3;
  Device device = Device::cpu();
  bool core = true, layer = true, projections = false, gqa = false, profile = false, json = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      MOH_CHECK(i + 1 < argc, "moh_bench_attention: ", arg, " needs a value");
      return argv[++i];
    };
    if (arg == "--seq") {
      a.seqs.clear();
      std::stringstream ss(value());
      for (std::string part; std::getline(ss, part, ',');) a.seqs.push_back(std::stoll(part));
    } else if (arg == "--tokens") {
      a.tokens = std::stoll(value());
    } else if (arg == "--layer-tokens") {
      a.layer_tokens = std::stoll(value());
    } else if (arg == "--reps") {
      a.reps = std::stoll(value());
    } else if (arg == "--scope") {
      std::string s = value();
      MOH_CHECK(s == "core" || s == "layer" || s == "both" || s == "projections" || s == "gqa" || s == "profile",
                "moh_bench_attention: --scope must be core, layer, both, projections, gqa or profile");
      a.gqa = s == "gqa";
      a.profile = s == "profile";
      a.projections = s == "projections";
      a.core = s == "core" || s == "both";
      a.layer = s == "layer" || s == "both";
    } else if (arg == "--device") {
      a.device = Device::parse(value());
    } else if (arg == "--json") {
      a.json = true;
    } else {
      MOH_FAIL("moh_bench_attention: unknown argument '", arg, "' (see the usage line in bench/attention/main.cpp)");
    }
  }
  MOH_CHECK(a.device.is_cpu() || !(a.gqa || a.projections),
            "moh_bench_attention: --scope gqa and projections run on the CPU only");
  // Before the first CUDA call, which reads it once.
  if (a.device.is_cuda() && a.profile) setenv("MOH_CUDA_SYNC", "1", 1);
  return a;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Each step run `reps` times after one warm-up, round-robin: round r runs the steps in turn starting at
// step r % count, so a slow stretch of a noisy machine falls on every variant alike. Per step: the median
// wall time, and the median over rounds of its time over step 0's in the same round (a paired ratio).
struct Timing {
  double ms = 0, ratio = 1;
};
std::vector<Timing> interleaved_timings(const std::vector<std::function<void()>>& steps, int64_t reps,
                                        Device device) {
  const size_t count = steps.size();
  for (const auto& step : steps) step();
  synchronize(device);
  std::vector<std::vector<double>> t(count, std::vector<double>(size_t(reps)));
  for (int64_t r = 0; r < reps; ++r)
    for (size_t j = 0; j < count; ++j) {
      const size_t i = (size_t(r) + j) % count;
      auto start = std::chrono::steady_clock::now();
      steps[i]();
      synchronize(device);
      t[i][size_t(r)] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
  std::vector<Timing> out(count);
  for (size_t i = 0; i < count; ++i) {
    std::vector<double> ratios(static_cast<size_t>(reps));
    for (int64_t r = 0; r < reps; ++r) ratios[size_t(r)] = t[i][size_t(r)] / t[0][size_t(r)];
    out[i] = {median_of(t[i]), median_of(ratios)};
  }
  return out;
}

// Each token keeps `topk` distinct routed heads drawn at random (balanced in expectation).
// [tokens, topk] int64: each token's topk distinct routed heads of `routed`, drawn uniformly.
Tensor random_topk(int64_t tokens, int64_t routed, int64_t topk, Generator& gen) {
  return moh::topk(uniform({tokens, routed}, 0, 1, gen), topk).indices;
}

std::function<void()> core_mha_step(int64_t batch, int64_t seq, Device dev) {
  Generator gen(1);
  Tensor qkv = normal({batch, seq, 3, kHeads, kHeadDim}, 0, 1, gen).to(dev);
  Tensor q = qkv.select(2, 0).permute({0, 2, 1, 3}), k = qkv.select(2, 1).permute({0, 2, 1, 3});
  Tensor v = qkv.select(2, 2).permute({0, 2, 1, 3});
  Tensor grad = normal({batch, kHeads, seq, kHeadDim}, 0, 1, gen).to(dev);
  const double scale = 1.0 / 8.0;
  return [=] {
    AttentionForward f = attention(q, k, v, scale, false);
    attention_backward(grad, q, k, v, f, scale, false);
  };
}

std::function<void()> core_moh_step(int64_t batch, int64_t seq, int64_t topk, Device dev) {
  Generator gen(1);
  Tensor qkv = normal({batch, seq, 3, kHeads, kHeadDim}, 0, 1, gen).to(dev);
  Tensor k = qkv.select(2, 1).permute({0, 2, 1, 3}), v = qkv.select(2, 2).permute({0, 2, 1, 3});
  const HeadRows rows = pack_head_rows(random_topk(batch * seq, kHeads - kShared, topk, gen).to(dev), batch, kHeads,
                                       kShared);
  Tensor q_tokens = qkv.select(2, 0).reshape({batch * seq * kHeads, kHeadDim});  // [N * H, Dh] view
  Tensor grad_rows = normal({rows.token_index.numel(), kHeadDim}, 0, 1, gen).to(dev);
  const double scale = 1.0 / 8.0;
  return [=] {
    Tensor q_rows = index_select(q_tokens, 0, rows.pair_index);
    AttentionForward f = attention_packed(q_rows, rows.row_offsets, rows.q_pos, k, v, scale, false, kHeads);
    attention_packed_backward(grad_rows, q_rows, rows.row_offsets, rows.q_pos, k, v, f, scale, false, kHeads);
  };
}

// One training step of the layer: forward, a loss weighting the output by w (plus the balance loss), backward.
void layer_step(MultiHeadAttention& layer, const Tensor& x, const ag::Variable& w) {
  for (auto& p : layer.parameters()) p.zero_grad();
  ag::Variable xv(x, true);
  AttentionOutput out = layer.forward(xv);
  ag::Variable loss = ag::sum(ag::mul(out.out, w));
  if (out.balance_loss.defined()) loss = ag::add(loss, ag::mul(out.balance_loss, 0.01));
  ag::backward(loss);
}

// x and the layer on the same device; the step keeps the layer alive.
std::function<void()> layer_step_fn(std::shared_ptr<MultiHeadAttention> layer, const Tensor& x) {
  Generator gen(3);
  ag::Variable w(normal(x.shape(), 0, 1, gen).to(x.device()));
  return [layer, x, w] { layer_step(*layer, x, w); };
}

// Ideal FLOP ratio of the sparse MoH layer to MHA (forward and backward scale alike): q and
// output projections and the attention core shrink with the active share; k/v projections do not.
double layer_flop_ratio(int64_t seq, int64_t topk) {
  const double active = double(kShared + topk) / kHeads;
  const double proj = 4.0 * kDim * kDim;            // per token: q, k, v, out projections (x2 FLOPs / 2)
  const double core = 2.0 * seq * kHeadDim * kHeads;  // per token: q k^T and p v
  const double mha = proj + core;
  const double moh = proj * (2.0 + 2.0 * active) / 4.0 + core * active;
  return moh / mha;
}

// ---------------------------------------------------------------- --scope projections
// Forward + backward of the routed heads' query projection x -> [rows, Dh] and output projection
// [rows, Dh] -> [N, dim] (loss: their sums weighted by fixed random tensors), gathered per head or
// dense over every (token, routed head) pair.
std::function<void()> projections_step(int64_t tokens, int64_t topk, bool gathered) {
  Generator gen(6);
  const int64_t routed = kHeads - kShared;
  const HeadRows rows = pack_head_rows(random_topk(tokens, routed, topk, gen), 1, routed, 0);  // routed heads only
  const int64_t r = gathered ? rows.token_index.numel() : tokens * routed;
  ag::Variable wq(normal({routed * kHeadDim, kDim}, 0, 0.02, gen), true);
  ag::Variable wo(normal({kDim, routed * kHeadDim}, 0, 0.02, gen), true);
  const Tensor x = normal({tokens, kDim}, 0, 1, gen), o = normal({r, kHeadDim}, 0, 1, gen);
  const ag::Variable gq(normal({r, kHeadDim}, 0, 1, gen)), gy(normal({tokens, kDim}, 0, 1, gen));
  return [=]() mutable {
    wq.zero_grad();
    wo.zero_grad();
    ag::Variable xv(x, true), ov(o, true), q, y;
    if (gathered) {
      q = ag::gather_linear(xv, rows.token_index, rows.head_offsets, ag::view(wq, {routed, kHeadDim, kDim}), {});
      ag::Variable w_heads = ag::permute(ag::view(wo, {kDim, routed, kHeadDim}), {1, 0, 2});
      y = ag::scatter_linear(ov, rows.token_index, rows.head_offsets, w_heads, tokens);
    } else {
      q = ag::reshape(linear(xv, wq, {}), {r, kHeadDim});
      y = linear(ag::reshape(ov, {tokens, routed * kHeadDim}), wo, {});
    }
    ag::backward(ag::add(ag::sum(ag::mul(q, gq)), ag::sum(ag::mul(y, gy))));
  };
}

void run_projections(const Args& args) {
  std::printf("moh_bench_attention --scope projections: %lld tokens, %lld routed heads x %lld, dim %lld, "
              "%d threads\n\n",
              (long long)args.layer_tokens, (long long)(kHeads - kShared), (long long)kHeadDim, (long long)kDim,
              num_threads());
  std::printf("%-7s %14s %14s %9s %9s\n", "active", "dense ms", "gathered ms", "ratio", "ideal");
  nlohmann::json js;
  for (const Share& s : kShares) {
    const std::vector<Timing> t = interleaved_timings(
        {projections_step(args.layer_tokens, s.topk, false), projections_step(args.layer_tokens, s.topk, true)},
        args.reps, Device::cpu());
    const double dense = t[0].ms, gathered = t[1].ms, ratio = t[1].ratio;
    const double ideal = double(s.topk) / double(kHeads - kShared);
    std::printf("%-7s %14.1f %14.1f %9.3f %9.3f\n", (std::string(s.name) + "%").c_str(), dense, gathered, ratio,
                ideal);
    js[s.name] = {{"dense_ms", dense}, {"gathered_ms", gathered}, {"ratio", ratio}, {"ideal", ideal}};
  }
  if (args.json) std::printf("%s\n", js.dump().c_str());
}

// ---------------------------------------------------------------- --scope profile
// Median forward + backward ms of each phase of the layer step (after one warm-up step).
std::map<std::string, double> layer_phase_ms(MultiHeadAttention& layer, const Tensor& x, int64_t reps) {
  Generator gen(3);
  ag::Variable w(normal(x.shape(), 0, 1, gen).to(x.device()));
  layer_step(layer, x, w);
  synchronize(x.device());
  std::map<std::string, std::vector<double>> samples;
  for (int64_t r = 0; r < reps; ++r) {
    ag::PhaseProfiler profiler;
    layer_step(layer, x, w);
    synchronize(x.device());
    for (const auto& [phase, t] : profiler.phases()) samples[phase].push_back(t.forward_ms + t.backward_ms);
  }
  std::map<std::string, double> median;
  for (const auto& [phase, t] : samples) median[phase] = median_of(t);
  return median;
}

void run_profile(const Args& args) {
  const char* phases[] = {kRoutingPhase, kProjectionsPhase, kAttentionPhase, kRowMovesPhase, ag::kRestPhase};
  std::printf("moh_bench_attention --scope profile: %lld heads x %lld, %lld shared, %lld tokens per step, %s, "
              "%d threads; median ms per phase (forward + backward)%s\n",
              (long long)kHeads, (long long)kHeadDim, (long long)kShared, (long long)args.layer_tokens,
              args.device.str().c_str(), num_threads(),
              args.device.is_cuda() ? "; MOH_CUDA_SYNC=1: every kernel waited for" : "");
  nlohmann::json js;
  for (int64_t seq : args.seqs) {
    std::printf("\n%-5s %-10s", "seq", "variant");
    for (const char* p : phases) std::printf(" %12s", p);
    std::printf(" %9s %8s\n", "sum", "vs MHA");
    Generator gen(2);
    AttentionOptions opts;
    opts.dim = kDim;
    opts.num_heads = kHeads;
    const Tensor x = normal({std::max<int64_t>(1, args.layer_tokens / seq), seq, kDim}, 0, 1, gen).to(args.device);
    double mha_sum = 0;
    auto report = [&](const std::string& variant, MultiHeadAttention& layer) {
      const std::map<std::string, double> ms = layer_phase_ms(layer, x, args.reps);
      double sum = 0;
      std::printf("%-5lld %-10s", (long long)seq, variant.c_str());
      for (const char* p : phases) {
        const double t = ms.count(p) ? ms.at(p) : 0.0;
        sum += t;
        std::printf(" %12.1f", t);
        js[std::to_string(seq)][variant][p] = t;
      }
      if (mha_sum == 0) mha_sum = sum;
      std::printf(" %9.1f %8.3f\n", sum, sum / mha_sum);
      js[std::to_string(seq)][variant]["sum"] = sum;
    };
    MultiHeadAttention mha(opts, gen);
    mha.to(args.device);
    report("MHA", mha);
    for (const Share& s : kShares) {
      MoHAttention layer(opts, {kShared, s.topk, MoHExecution::Sparse}, gen);
      layer.to(args.device);
      report(std::string("MoH ") + s.name + "% " + (layer.gathered_projections() ? "g" : "d"), layer);
    }
  }
  if (args.json) std::printf("%s\n", js.dump().c_str());
}

// ---------------------------------------------------------------- --scope gqa
constexpr int64_t kGqaBatch = 8, kGqaSeq = 512, kGqaHeads = 16, kGqaKvHeads = 4;

struct StepCost {
  double ms = 0, peak_mib = 0;
};

// Median time of `reps` steps after one warm-up, and the largest peak of allocator bytes above
// what was held when a step started.
StepCost measure_step(const std::function<void()>& step, int64_t reps) {
  Allocator& cpu = cpu_allocator();
  step();
  std::vector<double> t;
  double peak = 0;
  for (int64_t r = 0; r < reps; ++r) {
    cpu.reset_peak();
    const int64_t base = cpu.stats().current_bytes;
    auto start = std::chrono::steady_clock::now();
    step();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    peak = std::max(peak, double(cpu.stats().peak_bytes - base) / double(1 << 20));
  }
  return {median_of(t), peak};
}

// The attention op's training step on q [B, H, T, Dh] and k, v [B, Hkv, T, Dh]; `repeat` first
// copies k, v to H heads (expand + reshape, as the layers did before).
StepCost gqa_op_step(bool repeat, int64_t reps) {
  Generator gen(4);
  const int64_t b = kGqaBatch, t = kGqaSeq, h = kGqaHeads, hkv = kGqaKvHeads, group = h / hkv;
  ag::Variable q(normal({b, h, t, kHeadDim}, 0, 1, gen), true), k(normal({b, hkv, t, kHeadDim}, 0, 1, gen), true),
      v(normal({b, hkv, t, kHeadDim}, 0, 1, gen), true);
  const ag::Variable w(normal({b, h, t, kHeadDim}, 0, 1, gen));
  auto repeated = [&](const ag::Variable& x) {
    return ag::reshape(ag::expand(ag::unsqueeze(x, 2), {b, hkv, group, t, kHeadDim}), {b, h, t, kHeadDim});
  };
  return measure_step([&] {
    for (ag::Variable* x : {&q, &k, &v}) x->zero_grad();
    ag::Variable o = repeat ? ag::attention(q, repeated(k), repeated(v), 0.125, true)
                            : ag::attention(q, k, v, 0.125, true);
    ag::backward(ag::sum(ag::mul(o, w)));
  }, reps);
}

// The MultiHeadAttention layer's training step (dim 1024, causal, the K/V heads read in place).
StepCost gqa_layer_step(int64_t reps) {
  Generator gen(5);
  AttentionOptions opts;
  opts.dim = kGqaHeads * kHeadDim;
  opts.num_heads = kGqaHeads;
  opts.num_kv_heads = kGqaKvHeads;
  opts.causal = true;
  MultiHeadAttention layer(opts, gen);
  const Tensor x = normal({kGqaBatch, kGqaSeq, opts.dim}, 0, 1, gen);
  const ag::Variable w(normal(x.shape(), 0, 1, gen));
  return measure_step([&] {
    for (auto& p : layer.parameters()) p.zero_grad();
    ag::Variable xv(x, true);
    ag::backward(ag::sum(ag::mul(layer.forward(xv).out, w)));
  }, reps);
}

void run_gqa(const Args& args) {
  std::printf("moh_bench_attention --scope gqa: B %lld, T %lld, %lld query heads on %lld K/V heads of %lld, causal, "
              "%d threads\n\n",
              (long long)kGqaBatch, (long long)kGqaSeq, (long long)kGqaHeads, (long long)kGqaKvHeads,
              (long long)kHeadDim, num_threads());
  const StepCost before = gqa_op_step(true, args.reps), after = gqa_op_step(false, args.reps);
  const StepCost layer = gqa_layer_step(args.reps);
  std::printf("%-40s %10s %10s\n", "training step (forward + backward)", "median ms", "peak MiB");
  std::printf("%-40s %10.1f %10.1f\n", "attention op, K/V repeated (before)", before.ms, before.peak_mib);
  std::printf("%-40s %10.1f %10.1f\n", "attention op, K/V heads in place", after.ms, after.peak_mib);
  std::printf("%-40s %10.1f %10.1f\n", "MultiHeadAttention layer (in place)", layer.ms, layer.peak_mib);
  if (args.json) {
    nlohmann::json js;
    js["op_repeated"] = {{"ms", before.ms}, {"peak_mib", before.peak_mib}};
    js["op_in_place"] = {{"ms", after.ms}, {"peak_mib", after.peak_mib}};
    js["layer"] = {{"ms", layer.ms}, {"peak_mib", layer.peak_mib}};
    std::printf("%s\n", js.dump().c_str());
  }
}

struct Row {
  int64_t seq;
  std::string scope, variant;
  double ms, ratio, flop_ratio;
};

}  // namespace
}  // namespace moh

int main(int argc, char** argv) {
  using namespace moh;
  try {
    const Args args = parse(argc, argv);
    if (args.gqa) {
      run_gqa(args);
      return 0;
    }
    if (args.projections) {
      run_projections(args);
      return 0;
    }
    if (args.profile) {
      run_profile(args);
      return 0;
    }
    std::vector<Row> rows;
    std::map<std::string, std::map<std::string, double>> worst;  // share -> {core_ratio, layer_ratio}
    std::map<std::string, std::map<std::string, std::map<std::string, double>>> by_seq;
    double dense_overhead = 0;
    std::printf("moh_bench_attention: %lld heads x %lld, dim %lld, %lld shared heads, %s, %d threads\n",
                (long long)kHeads, (long long)kHeadDim, (long long)kDim, (long long)kShared,
                args.device.str().c_str(), num_threads());
    for (int64_t seq : args.seqs) {
      if (args.core) {
        const int64_t batch = std::max<int64_t>(1, args.tokens / seq);
        std::vector<std::function<void()>> steps{core_mha_step(batch, seq, args.device)};
        for (const Share& s : kShares) steps.push_back(core_moh_step(batch, seq, s.topk, args.device));
        const std::vector<Timing> t = interleaved_timings(steps, args.reps, args.device);
        rows.push_back({seq, "core", "MHA", t[0].ms, 1.0, 1.0});
        for (size_t i = 0; i < std::size(kShares); ++i) {
          const Share& s = kShares[i];
          const Timing& moh = t[i + 1];
          const double active = double(kShared + s.topk) / kHeads;
          rows.push_back({seq, "core", std::string("MoH sparse ") + s.name + "%", moh.ms, moh.ratio, active});
          worst[s.name]["core_ratio"] = std::max(worst[s.name]["core_ratio"], moh.ratio);
          by_seq[std::to_string(seq)][s.name]["core_ratio"] = moh.ratio;
          by_seq[std::to_string(seq)][s.name]["active_share"] = active;
        }
      }
      if (args.layer) {
        const int64_t batch = std::max<int64_t>(1, args.layer_tokens / seq);
        Generator gen(2);
        AttentionOptions opts;
        opts.dim = kDim;
        opts.num_heads = kHeads;
        Tensor x = normal({batch, seq, kDim}, 0, 1, gen).to(args.device);
        // Every variant alive at once, so that their steps interleave: MHA; per share the projections
        // MoHProjections::Auto picks, then the other; MoH's dense execution at 75%.
        std::vector<std::function<void()>> steps;
        std::vector<Row> variants;  // steps[i]'s row, its ms and ratio filled in after the timing
        auto add = [&](std::shared_ptr<MultiHeadAttention> layer, std::string name, double flops) {
          layer->to(args.device);
          steps.push_back(layer_step_fn(layer, x));
          variants.push_back({seq, "layer", std::move(name), 0, 0, flops});
          return steps.size() - 1;
        };
        add(std::make_shared<MultiHeadAttention>(opts, gen), "MHA", 1.0);
        std::vector<size_t> picked_step;  // per share, the step of Auto's pick
        size_t dense_step = 0;
        for (const Share& s : kShares) {
          auto picked = std::make_shared<MoHAttention>(opts, MoHOptions{kShared, s.topk, MoHExecution::Sparse}, gen);
          const bool gathered = picked->gathered_projections();
          MoHOptions other{kShared, s.topk, MoHExecution::Sparse};
          other.projections = gathered ? MoHProjections::Dense : MoHProjections::Gathered;
          const double flops = layer_flop_ratio(seq, s.topk);
          const std::string name = std::string("MoH sparse ") + s.name + "%";
          picked_step.push_back(add(picked, name + (gathered ? " g" : " d"), flops));
          add(std::make_shared<MoHAttention>(opts, other, gen), name + (gathered ? " d" : " g"), flops);
          if (std::string(s.name) == "75") {
            const MoHOptions dense_75{kShared, s.topk, MoHExecution::Dense};
            dense_step = add(std::make_shared<MoHAttention>(opts, dense_75, gen), "MoH dense 75%", 1.0);
          }
        }
        const std::vector<Timing> t = interleaved_timings(steps, args.reps, args.device);
        for (size_t i = 0; i < variants.size(); ++i) {
          variants[i].ms = t[i].ms;
          variants[i].ratio = t[i].ratio;
          rows.push_back(variants[i]);
        }
        for (size_t j = 0; j < std::size(kShares); ++j) {
          const Share& s = kShares[j];
          const Row& picked = variants[picked_step[j]];
          worst[s.name]["layer_ratio"] = std::max(worst[s.name]["layer_ratio"], picked.ratio);
          worst[s.name]["layer_flop_ratio"] = picked.flop_ratio;
          by_seq[std::to_string(seq)][s.name]["layer_ratio"] = picked.ratio;
          by_seq[std::to_string(seq)][s.name]["layer_flop_ratio"] = picked.flop_ratio;
          by_seq[std::to_string(seq)][s.name]["active_share"] = double(kShared + s.topk) / kHeads;
        }
        dense_overhead = std::max(dense_overhead, t[dense_step].ratio - 1.0);
      }
    }
    std::printf("\n%-5s %-6s %-16s %10s %9s %12s\n", "seq", "scope", "variant", "median ms", "vs MHA", "ideal");
    for (const Row& r : rows)
      std::printf("%-5lld %-6s %-16s %10.1f %9.3f %12.3f\n", (long long)r.seq, r.scope.c_str(), r.variant.c_str(),
                  r.ms, r.ratio, r.flop_ratio);
    std::printf("(ideal: active head share for the core, FLOP ratio for the layer; g/d: gathered or dense\n"
                " projections, the first of each pair is what MoHProjections::Auto picks; worst dense overhead %.1f%%)\n",
                dense_overhead * 100);
    if (args.json) {
      nlohmann::json js(worst);
      js["dense_overhead"] = dense_overhead;
      js["by_seq"] = by_seq;
      std::printf("%s\n", js.dump().c_str());
    }
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
