// moh_bench_dit_train: training throughput of the DiT fmnist preset (models/dit: 4 x 8 x 8 latents, patch 2,
// dim 128, depth 6) with --heads heads (8, as configs/dit/fmnist_*.yaml) on random latents and labels, fp32 on
// the CPU. One step is the trainer's (trainers/dit_task.cpp): fresh timesteps and noise, q_sample, forward
// (10% class dropout), mean of training_losses (MSE + variational bound, learned sigma, 1000 linear steps),
// + 0.01 * the mean MoH balance loss, backward, AdamW (DiT's: lr 5e-4, no weight decay). The median of the
// per-step times after --warmup is reported, with samples/s.
// With --moh every block runs MoHAttention (--shared heads always on, top --topk of the rest routed, sparse
// execution; defaults 4 and 2, configs/dit/fmnist_moh75.yaml); both take one value or one per block (4,4,2).
// The last line is one JSON object: "config" (the resolved model shape, so scripts/bench_dit_vs_torch.py
// builds the same model and never copies it), "step_ms" (every measured step) and the medians (CPU time too);
// --config-only prints just that object. Bad options exit 2 with a message.
// Usage: moh_bench_dit_train [--batch 128] [--steps 20] [--warmup 3] [--threads T] [--heads 8]
//                            [--moh [--shared 4] [--topk 2]] [--config-only]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograd/autograd.h"
#include "core/ops.h"
#include "layers/moh_attention.h"
#include "core/random.h"
#include "models/dit/diffusion.h"
#include "models/dit/diffusion_loss.h"
#include "models/dit/dit.h"
#include "trainers/adamw.h"

namespace moh {
namespace {

constexpr const char* kName = "moh_bench_dit_train";
constexpr double kBalanceWeight = 0.01;    // the trainer's default moh.balance_loss
constexpr double kClassDropout = 0.1;      // configs/dit/fmnist_base.yaml (model.class_dropout default)
constexpr int64_t kDiffusionSteps = 1000;  // linear betas, as fmnist_base.yaml
const AdamWOptions kAdamW{.lr = 5e-4, .weight_decay = 0.0};

struct Args {
  int64_t batch = 128, steps = 20, warmup = 3, threads = 0, heads = 8;  // threads 0: OMP_NUM_THREADS / default
  bool moh = false, config_only = false, moh_lists_given = false;
  std::vector<int64_t> shared{4}, topk{2};
};

// The whole of `text` as an integer >= min_value, else an error naming the option.
int64_t parse_int(const std::string& flag, const std::string& text, int64_t min_value) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  MOH_CHECK(used == text.size() && used > 0, kName, ": ", flag, " takes an integer, got '", text, "'");
  MOH_CHECK(v >= min_value, kName, ": ", flag, " must be >= ", min_value, ", got ", v);
  return v;
}

// "4" or "4,4,2": integers >= 0 separated by commas.
std::vector<int64_t> int_list(const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    out.push_back(parse_int(flag, text.substr(at, comma - at), 0));
    at = comma + 1;
  }
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      MOH_CHECK(i + 1 < argc, kName, ": ", arg, " needs a value");
      return argv[++i];
    };
    if (arg == "--batch") a.batch = parse_int(arg, value(), 1);
    else if (arg == "--steps") a.steps = parse_int(arg, value(), 1);
    else if (arg == "--warmup") a.warmup = parse_int(arg, value(), 0);
    else if (arg == "--threads") a.threads = parse_int(arg, value(), 1);
    else if (arg == "--heads") a.heads = parse_int(arg, value(), 1);
    else if (arg == "--moh") a.moh = true;
    else if (arg == "--shared") a.shared = int_list(arg, value()), a.moh_lists_given = true;
    else if (arg == "--topk") a.topk = int_list(arg, value()), a.moh_lists_given = true;
    else if (arg == "--config-only") a.config_only = true;
    else MOH_FAIL(kName, ": unknown argument '", arg, "' (usage: bench/dit_train/main.cpp)");
  }
  MOH_CHECK(a.moh || !a.moh_lists_given, kName, ": --shared and --topk need --moh");
  return a;
}

// The fmnist preset with --heads and the attention; validated (a bad --heads/--shared/--topk throws here).
DitOptions model_options(const Args& a) {
  DitOptions o = dit_preset("fmnist");
  o.heads = a.heads;
  o.class_dropout_prob = kClassDropout;
  if (a.moh) {
    o.attention.shared_heads = a.shared;
    o.attention.routed_topk = a.topk;
    o.attention.execution = MoHExecution::Sparse;
  }
  o.validate();
  return o;
}

nlohmann::json list_json(const std::vector<int64_t>& v) {
  return v.size() == 1 ? nlohmann::json(v[0]) : nlohmann::json(v);
}

nlohmann::json config_json(const Args& a, const DitOptions& o) {
  return {{"preset", "fmnist"}, {"input_size", o.input_size}, {"patch_size", o.patch_size},
          {"in_channels", o.in_channels}, {"dim", o.dim}, {"depth", o.depth}, {"heads", o.heads},
          {"mlp_ratio", o.mlp_ratio}, {"num_classes", o.num_classes},
          {"class_dropout_prob", o.class_dropout_prob}, {"learn_sigma", o.learn_sigma},
          {"frequency_dim", o.frequency_dim}, {"diffusion_steps", kDiffusionSteps}, {"schedule", "linear"},
          {"batch", a.batch}, {"attention", a.moh ? "moh_sparse" : "mha"},
          {"shared_heads", a.moh ? list_json(a.shared) : nlohmann::json(o.heads)},
          {"routed_topk", a.moh ? list_json(a.topk) : nlohmann::json(0)}, {"balance_weight", kBalanceWeight},
          {"lr", kAdamW.lr}, {"weight_decay", kAdamW.weight_decay}, {"threads", num_threads()}};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Per measured step (ms): the whole step, its forward through the loss, backward and optimizer parts, and
// the CPU time of all threads (std::clock; less sensitive than wall time to other jobs on the machine).
struct Timings {
  std::vector<double> step, forward, backward, optimizer, cpu;
  double loss_first = 0, loss_last = 0;
};

Timings train(DiT& model, const Args& args, const Tensor& latents, const Tensor& labels, Generator& gen) {
  using Clock = std::chrono::steady_clock;
  const GaussianDiffusion diffusion = GaussianDiffusion::create(DiffusionOptions{.steps = kDiffusionSteps});
  AdamW optimizer(model.named_parameters(), kAdamW);
  Timings t;
  for (int64_t s = 0; s < args.warmup + args.steps; ++s) {
    const auto start = Clock::now();
    const std::clock_t cpu_start = std::clock();
    const Tensor steps = uniform_timesteps(args.batch, diffusion.num_timesteps(), gen);
    const Tensor noise = normal(latents.shape(), 0.0, 1.0, gen);
    const Tensor x_t = diffusion.q_sample(latents, steps, noise);
    DitOutput out = model.forward(ag::Variable(x_t), steps, labels);
    const ag::Variable diffusion_loss =
        ag::mean(training_losses(diffusion, out.out, latents, x_t, steps, noise).loss);
    ag::Variable loss = diffusion_loss;
    if (const ag::Variable balance = mean_balance_loss(out.balance_losses); balance.defined())
      loss = ag::add(loss, ag::mul(balance, kBalanceWeight));
    const auto forward_end = Clock::now();
    ag::backward(loss);
    const auto backward_end = Clock::now();
    optimizer.step();
    optimizer.zero_grad();
    const double loss_value = diffusion_loss.data().item<double>();
    const auto end = Clock::now();
    const std::clock_t cpu_end = std::clock();
    MOH_CHECK(std::isfinite(loss_value), kName, ": loss is ", loss_value, " at step ", s);
    if (s == 0) t.loss_first = loss_value;
    t.loss_last = loss_value;
    if (s < args.warmup) continue;
    t.step.push_back(ms_between(start, end));
    t.forward.push_back(ms_between(start, forward_end));
    t.backward.push_back(ms_between(forward_end, backward_end));
    t.optimizer.push_back(ms_between(backward_end, end));
    t.cpu.push_back(double(cpu_end - cpu_start) * 1e3 / CLOCKS_PER_SEC);
  }
  return t;
}

int run(int argc, char** argv) {
  const Args args = parse(argc, argv);
  if (args.threads > 0) set_num_threads(int(args.threads));
  const DitOptions o = model_options(args);
  const nlohmann::json config = config_json(args, o);
  if (args.config_only) {
    std::printf("%s\n", config.dump().c_str());
    return 0;
  }
  Generator init(1234), data(5678);
  DiT model(o, init, std::make_shared<Generator>(91011));
  model.train();
  const Tensor latents = normal({args.batch, o.in_channels, o.input_size, o.input_size}, 0, 1, data);
  const Tensor labels = uniform({args.batch}, 0, double(o.num_classes) - 1e-3, data).to(DType::Int64);
  std::printf("%s: %s, %lld parameters, batch %lld, %s, %d threads\n", kName, model.extra_repr().c_str(),
              (long long)model.num_parameters(), (long long)args.batch,
              config["attention"].get<std::string>().c_str(), num_threads());
  const Timings t = train(model, args, latents, labels, data);
  const double step = median(t.step), samples_per_s = double(args.batch) * 1e3 / step;
  const double fwd = median(t.forward), bwd = median(t.backward), opt = median(t.optimizer), cpu = median(t.cpu);
  std::printf("median %.2f ms/step (forward %.2f, backward %.2f, optimizer %.2f; fastest step %.2f; CPU time "
              "%.2f ms), %.1f samples/s (loss %.4f -> %.4f over %lld steps)\n",
              step, fwd, bwd, opt, *std::min_element(t.step.begin(), t.step.end()), cpu, samples_per_s,
              t.loss_first, t.loss_last, (long long)(args.warmup + args.steps));
  const nlohmann::json js{{"framework", "moh"}, {"config", config}, {"parameters", model.num_parameters()},
                          {"step_ms", t.step}, {"median_ms", step}, {"forward_ms", fwd}, {"backward_ms", bwd},
                          {"optimizer_ms", opt}, {"cpu_ms", cpu}, {"samples_per_s", samples_per_s},
                          {"loss_first", t.loss_first}, {"loss_last", t.loss_last},
                          {"blas_core", blas_core_name()}};
  std::printf("%s\n", js.dump().c_str());
  return 0;
}

}  // namespace
}  // namespace moh

int main(int argc, char** argv) {
  try {
    return moh::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
