// moh_bench_autoencoder: one training step of the latent autoencoder (models/autoencoder) on random
// images, float32 on the CPU: the median over --reps steps (after --warmup) of the encoder forward,
// the decoder forward, the backward of the loss, and the whole step, with samples/s.
// --json prints one JSON object that scripts/bench_autoencoder_vs_torch.py reads to put PyTorch's
// times for the same model (tests/reference/autoencoder_reference.py) beside moh's.
// Usage: moh_bench_autoencoder [--preset fmnist|sd] [--batch 32] [--size 32] [--reps 5] [--warmup 1]
//                              [--threads 0 (OpenMP default)] [--json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "core/random.h"
#include "core/ops.h"
#include "models/autoencoder/autoencoder.h"

namespace moh {
namespace {

struct Args {
  std::string preset = "fmnist";
  int64_t batch = 32, size = 32, reps = 5, warmup = 1, threads = 0;
  bool json = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--json") {
      a.json = true;
      continue;
    }
    MOH_CHECK(i + 1 < argc, "moh_bench_autoencoder: ", arg, " needs a value");
    const std::string v = argv[++i];
    if (arg == "--preset") a.preset = v;
    else if (arg == "--batch") a.batch = std::stoll(v);
    else if (arg == "--size") a.size = std::stoll(v);
    else if (arg == "--reps") a.reps = std::stoll(v);
    else if (arg == "--warmup") a.warmup = std::stoll(v);
    else if (arg == "--threads") a.threads = std::stoll(v);
    else MOH_FAIL("moh_bench_autoencoder: unknown option ", arg,
                  " (--preset, --batch, --size, --reps, --warmup, --threads, --json)");
  }
  MOH_CHECK(a.batch >= 1 && a.reps >= 1 && a.warmup >= 0 && a.size >= 1,
            "moh_bench_autoencoder: --batch, --size and --reps must be >= 1");
  return a;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int run(int argc, char** argv) {
  const Args a = parse(argc, argv);
  if (a.threads > 0) set_num_threads(int(a.threads));
  const AutoencoderOptions o = autoencoder_preset(a.preset);
  Generator gen(1), noise(2);
  Autoencoder model(o, gen);
  const Tensor images = uniform({a.batch, o.in_channels, a.size, a.size}, -1.0, 1.0, gen);
  std::vector<double> encode_ms, decode_ms, backward_ms, step_ms;
  for (int64_t r = 0; r < a.warmup + a.reps; ++r) {
    const auto start = Clock::now();
    const ag::Variable x(images);
    const LatentPosterior posterior = model.encode(x);
    const double e = ms_since(start);
    const auto decode_start = Clock::now();
    AutoencoderOutput out{posterior, model.decode(posterior.sample(noise))};
    const double d = ms_since(decode_start);
    const auto backward_start = Clock::now();
    ag::backward(autoencoder_loss(x, out, ReconstructionLoss::L1, 1e-6).total);
    const double b = ms_since(backward_start);
    for (ag::Variable p : model.parameters()) p.zero_grad();
    if (r >= a.warmup) {
      encode_ms.push_back(e), decode_ms.push_back(d), backward_ms.push_back(b);
      step_ms.push_back(ms_since(start));
    }
  }
  const double step = median(step_ms);
  if (a.json) {
    std::printf("{\"preset\": \"%s\", \"batch\": %lld, \"size\": %lld, \"threads\": %d, \"parameters\": %lld, "
                "\"encode_ms\": %.3f, \"decode_ms\": %.3f, \"backward_ms\": %.3f, \"step_ms\": %.3f}\n",
                a.preset.c_str(), (long long)a.batch, (long long)a.size, num_threads(),
                (long long)model.num_parameters(), median(encode_ms), median(decode_ms), median(backward_ms), step);
    return 0;
  }
  std::printf("autoencoder %s (%lld parameters), batch %lld of %lld x %lld, %d threads, median of %lld steps\n",
              a.preset.c_str(), (long long)model.num_parameters(), (long long)a.batch, (long long)a.size,
              (long long)a.size, num_threads(), (long long)a.reps);
  std::printf("| encode ms | decode ms | backward ms | step ms | samples/s |\n| --- | --- | --- | --- | --- |\n");
  std::printf("| %.1f | %.1f | %.1f | %.1f | %.1f |\n", median(encode_ms), median(decode_ms), median(backward_ms),
              step, 1000.0 * double(a.batch) / step);
  return 0;
}

}  // namespace
}  // namespace moh

int main(int argc, char** argv) {
  try {
    return moh::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moh_bench_autoencoder: %s\n", e.what());
    return 1;
  }
}
