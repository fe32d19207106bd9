// moh_bench_vit_train: training throughput of a ViT preset (default `tiny`) on random images and labels
// (fp32, AdamW, cross-entropy, drop_path 0, learned pos_embed, the preset's pooling): forward, backward
// and optimizer step timed per step; the median after a warm-up is reported. With --moh every block
// runs MoHAttention (--shared heads always on, top --topk of the rest routed, sparse execution; the
// defaults are those of configs/vit/fmnist_moh.yaml) and the step adds 0.01 * the mean balance loss,
// as the trainer does.
// --projections picks how the sparse execution computes the routed heads' query and output projections
// (MoHProjections; auto by default).
// --shared/--topk take one value for every block or a comma list with one per block (8,2,2,2,2,2).
// --attention-share also times every block's attention alone (forward + backward on [batch, tokens, dim]
// inputs, summed over blocks) and reports its share of the median training step.
// The last line is one JSON object: "config" (the model shape, read from vit_preset so scripts
// never copy it), "step_ms" and the medians; --config-only prints just that object (no training).
// --profile charges every timed step's forward and backward to the phases the attention layers mark
// (autograd/profile.h: routing, projections, attention, row moves; the MLP, norms, loss and optimizer are
// "rest") and prints the median ms of each.
// Usage: moh_bench_vit_train [--preset tiny] [--steps 30] [--warmup 5] [--batch 128] [--threads T]
//                            [--moh] [--shared 2] [--topk 4] [--dense] [--projections auto|gathered|dense]
//                            [--attention-share] [--profile]
//                            [--config-only]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograd/autograd.h"
#include "autograd/profile.h"
#include "core/factory.h"
#include "core/ops.h"
#include "layers/moh_attention.h"
#include "core/random.h"
#include "models/vit/vit.h"
#include "trainers/adamw.h"

namespace moh {
namespace {

constexpr double kBalanceWeight = 0.01;  // the trainer's default moh.balance_loss

struct Args {
  std::string preset = "tiny";
  int64_t steps = 30, warmup = 5, batch = 128, threads = 0;  // threads 0: OMP_NUM_THREADS / default
  bool moh = false, dense = false, config_only = false, attention_share = false, profile = false;
  std::vector<int64_t> shared{2}, topk{4};
  std::string projections = "auto";  // MoHProjections of the sparse execution
};

// "2" or "8,2,2": non-negative integers separated by commas.
std::vector<int64_t> int_list(const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const int64_t v = std::stoll(text.substr(at, comma - at));
    MOH_CHECK(v >= 0, "moh_bench_vit_train: ", flag, " values must be >= 0, got ", v);
    out.push_back(v);
    at = comma + 1;
  }
  return out;
}

nlohmann::json list_json(const std::vector<int64_t>& v) {
  return v.size() == 1 ? nlohmann::json(v[0]) : nlohmann::json(v);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      MOH_CHECK(i + 1 < argc, "moh_bench_vit_train: ", arg, " needs a value");
      return argv[++i];
    };
    auto positive = [&]() {
      const int64_t v = std::stoll(value());
      MOH_CHECK(v > 0, "moh_bench_vit_train: ", arg, " must be positive, got ", v);
      return v;
    };
    if (arg == "--preset") a.preset = value();
    else if (arg == "--steps") a.steps = positive();
    else if (arg == "--warmup") a.warmup = std::stoll(value());
    else if (arg == "--batch") a.batch = positive();
    else if (arg == "--threads") a.threads = positive();
    else if (arg == "--moh") a.moh = true;
    else if (arg == "--shared") a.shared = int_list(arg, value());
    else if (arg == "--topk") a.topk = int_list(arg, value());
    else if (arg == "--attention-share") a.attention_share = true;
    else if (arg == "--dense") a.dense = true;
    else if (arg == "--projections") a.projections = value();
    else if (arg == "--profile") a.profile = true;
    else if (arg == "--config-only") a.config_only = true;
    else MOH_FAIL("moh_bench_vit_train: unknown argument '", arg, "' (usage: bench/vit_train/main.cpp)");
  }
  MOH_CHECK(a.warmup >= 0, "moh_bench_vit_train: --warmup must be >= 0, got ", a.warmup);
  return a;
}

VitOptions model_options(const Args& a) {
  VitOptions o = vit_preset(a.preset);
  o.drop_path = 0.0;
  o.pos_embed = VitOptions::PosEmbed::Learned;
  if (a.moh) {
    o.attention.shared_heads = a.shared;
    o.attention.routed_topk = a.topk;
    o.attention.execution = a.dense ? MoHExecution::Dense : MoHExecution::Sparse;
    const std::optional<MoHProjections> projections = moh_projections_from_name(a.projections);
    MOH_CHECK(projections, "moh_bench_vit_train: --projections takes auto, gathered or dense, got '", a.projections,
              "'");
    o.attention.projections = *projections;
  }
  return o;
}

nlohmann::json config_json(const Args& a, const VitOptions& o) {
  return {{"preset", a.preset}, {"img_size", o.img_size}, {"patch_size", o.patch_size},
          {"in_chans", o.in_chans}, {"num_classes", o.num_classes}, {"dim", o.dim}, {"depth", o.depth},
          {"heads", o.heads}, {"mlp_hidden", int64_t(double(o.dim) * o.mlp_ratio)},
          {"qkv_bias", o.qkv_bias}, {"class_token", o.class_token}, {"layer_norm_eps", 1e-6},
          {"batch", a.batch},
          {"attention", a.moh ? (a.dense ? "moh_dense" : "moh_sparse") : "mha"},
          {"shared_heads", a.moh ? list_json(a.shared) : nlohmann::json(o.heads)},
          {"routed_topk", a.moh ? list_json(a.topk) : nlohmann::json(0)},
          {"lr", AdamWOptions{}.lr}, {"weight_decay", AdamWOptions{}.weight_decay}};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Per-step times in ms after the warm-up: the whole step, its forward (through the loss), backward and
// optimizer parts, and the CPU time of all threads (std::clock, less sensitive than wall time to a busy
// machine).
struct Timings {
  std::vector<double> step, forward, backward, optimizer, cpu;
  std::map<std::string, std::vector<double>> phases;  // with --profile: forward + backward ms per phase
  double loss_first = 0, loss_last = 0;
};

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

Timings train(VisionTransformer& model, const Args& args, const Tensor& images, const Tensor& labels) {
  using Clock = std::chrono::steady_clock;
  AdamW optimizer(model.named_parameters(), AdamWOptions{});
  Timings t;
  for (int64_t s = 0; s < args.warmup + args.steps; ++s) {
    std::optional<ag::PhaseProfiler> profiler;
    if (args.profile) profiler.emplace();
    const auto start = Clock::now();
    const std::clock_t cpu_start = std::clock();
    VitOutput out = model.forward(ag::Variable(images));
    ag::Variable ce = ag::cross_entropy(out.logits, labels);
    ag::Variable loss = ce;
    if (const ag::Variable lb = mean_balance_loss(out.balance_losses); lb.defined())
      loss = ag::add(loss, ag::mul(lb, kBalanceWeight));
    const auto forward_end = Clock::now();
    ag::backward(loss);
    const auto backward_end = Clock::now();
    optimizer.step();
    optimizer.zero_grad();
    const double loss_value = ce.data().item<double>();
    const auto end = Clock::now();
    const std::clock_t cpu_end = std::clock();
    MOH_CHECK(std::isfinite(loss_value), "moh_bench_vit_train: loss is ", loss_value, " at step ", s);
    if (s == 0) t.loss_first = loss_value;
    t.loss_last = loss_value;
    if (s < args.warmup) continue;
    t.step.push_back(ms_between(start, end));
    t.forward.push_back(ms_between(start, forward_end));
    t.backward.push_back(ms_between(forward_end, backward_end));
    t.optimizer.push_back(ms_between(backward_end, end));
    t.cpu.push_back(double(cpu_end - cpu_start) * 1e3 / CLOCKS_PER_SEC);
    if (profiler)
      for (const auto& [phase, time] : profiler->phases()) t.phases[phase].push_back(time.forward_ms + time.backward_ms);
  }
  return t;
}

// Wall time (ms) per repetition of every block's attention alone, forward and backward, on the inputs
// it sees in the model: the attention part of one training step.
std::vector<double> time_attention(const VisionTransformer& model, const Args& args, Generator& gen) {
  using Clock = std::chrono::steady_clock;
  const int64_t tokens = model.num_tokens(), dim = model.options().dim;
  const Tensor x0 = normal({args.batch, tokens, dim}, 0, 1, gen), g = normal({args.batch, tokens, dim}, 0, 1, gen);
  const NamedParameters params = model.named_parameters();
  std::vector<double> ms;
  for (int64_t s = 0; s < args.warmup + args.steps; ++s) {
    const auto start = Clock::now();
    for (const auto& block : model.blocks) {
      ag::Variable x(x0, true);
      AttentionOutput a = block->attn->forward(x);
      ag::Variable loss = ag::sum(ag::mul(a.out, ag::Variable(g)));
      if (a.balance_loss.defined()) loss = ag::add(loss, ag::mul(a.balance_loss, kBalanceWeight));
      ag::backward(loss);
    }
    const auto end = Clock::now();
    for (auto [name, p] : params) p.zero_grad();  // handles share the leaf
    if (s >= args.warmup) ms.push_back(ms_between(start, end));
  }
  return ms;
}

}  // namespace
}  // namespace moh

int main(int argc, char** argv) {
  using namespace moh;
  try {
    const Args args = parse(argc, argv);
    if (args.threads > 0) set_num_threads(int(args.threads));
    const VitOptions o = model_options(args);
    nlohmann::json config = config_json(args, o);
    config["threads"] = num_threads();
    if (args.config_only) {
      std::printf("%s\n", config.dump().c_str());
      return 0;
    }
    Generator gen(1234);
    VisionTransformer model(o, gen);
    model.train();
    const Tensor images = normal({args.batch, o.in_chans, o.img_size, o.img_size}, 0, 1, gen);
    const Tensor labels = uniform({args.batch}, 0, double(o.num_classes) - 1e-3, gen).to(DType::Int64);
    std::printf("moh_bench_vit_train: %s, %lld parameters, batch %lld, %s, %d threads\n",
                model.extra_repr().c_str(), (long long)model.num_parameters(), (long long)args.batch,
                config["attention"].get<std::string>().c_str(), num_threads());
    const Timings t = train(model, args, images, labels);
    const double step = median(t.step), best = *std::min_element(t.step.begin(), t.step.end());
    const double images_per_s = double(args.batch) * 1e3 / step;
    const double fwd = median(t.forward), bwd = median(t.backward), opt = median(t.optimizer);
    const double cpu = median(t.cpu);
    std::printf("median %.2f ms/step (forward %.2f, backward %.2f, optimizer %.2f; fastest step %.2f; "
                "CPU time %.2f ms), %.1f images/s (loss %.4f -> %.4f over %lld steps)\n",
                step, fwd, bwd, opt, best, cpu, images_per_s, t.loss_first, t.loss_last,
                (long long)(args.warmup + args.steps));
    nlohmann::json js{{"framework", "moh"}, {"config", config}, {"step_ms", t.step}, {"median_ms", step},
                      {"min_ms", best}, {"forward_ms", fwd}, {"backward_ms", bwd}, {"optimizer_ms", opt},
                      {"cpu_ms", cpu}, {"images_per_s", images_per_s}, {"loss_first", t.loss_first},
                      {"loss_last", t.loss_last}, {"blas_core", blas_core_name()}};
    if (args.profile) {
      std::printf("phases (median ms per step, forward + backward):");
      for (const auto& [phase, samples] : t.phases) {
        const double ms = median(samples);
        js["phase_ms"][phase] = ms;
        std::printf(" %s %.2f", phase.c_str(), ms);
      }
      std::printf("\n");
    }
    if (args.attention_share) {
      const double attention = median(time_attention(model, args, gen));
      js["attention_ms"] = attention;
      js["attention_share"] = attention / step;
      std::printf("attention (every block, forward + backward) %.2f ms = %.1f%% of the step\n", attention,
                  100 * attention / step);
    }
    std::printf("%s\n", js.dump().c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moh_bench_vit_train: %s\n", e.what());
    return 2;
  }
}
