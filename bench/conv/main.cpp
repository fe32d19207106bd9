// moh_bench_conv: conv2d and group_norm on the latent autoencoder's layers (bench/autoencoder_layers.h,
// batch 32 by default), float32 on the CPU: the median time of the forward and of forward + backward
// (every gradient) over --reps repetitions after --warmup, and the forward's GFLOP/s. --json prints
// one JSON object per shape instead of the table, which scripts/bench_conv_vs_torch.py reads to put
// PyTorch's times beside moh's (same shapes, threads).
// Usage: moh_bench_conv [--batch 32] [--reps 10] [--warmup 2] [--threads 0 (OpenMP default)] [--json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "bench/autoencoder_layers.h"
#include "core/factory.h"
#include "core/ops.h"
#include "core/random.h"

namespace moh {
namespace {

struct Args {
  int64_t batch = 32, reps = 10, warmup = 2, threads = 0;
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
    MOH_CHECK(i + 1 < argc, "moh_bench_conv: ", arg, " needs a value");
    const int64_t v = std::stoll(argv[++i]);
    if (arg == "--batch") a.batch = v;
    else if (arg == "--reps") a.reps = v;
    else if (arg == "--warmup") a.warmup = v;
    else if (arg == "--threads") a.threads = v;
    else MOH_FAIL("moh_bench_conv: unknown option ", arg, " (--batch, --reps, --warmup, --threads, --json)");
  }
  MOH_CHECK(a.batch >= 1 && a.reps >= 1 && a.warmup >= 0, "moh_bench_conv: --batch and --reps must be >= 1");
  return a;
}

using bench::AutoencoderLayer;
using bench::kAutoencoderLayers;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double time_ms(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

struct Timing {
  double forward_ms, train_ms, gflop;
};

Timing time_layer(const AutoencoderLayer& s, const Args& a) {
  Generator gen(7);
  const Tensor x = uniform({a.batch, s.c, s.h, s.w}, -1.0, 1.0, gen, DType::Float32);
  std::vector<double> forward, train;
  double gflop = 0;
  if (!s.is_conv()) {
    const Tensor w = uniform({s.c}, 0.5, 1.5, gen, DType::Float32), b = uniform({s.c}, -1.0, 1.0, gen, DType::Float32);
    const Tensor g = uniform(x.shape(), -1.0, 1.0, gen, DType::Float32);
    for (int64_t r = 0; r < a.warmup + a.reps; ++r) {
      ag::Variable xv(x, true), wv(w, true), bv(b, true);
      double f = 0;
      const double t = time_ms([&] {
        ag::Variable y;
        f = time_ms([&] { y = ag::group_norm(xv, s.norm_groups, wv, bv, 1e-6); });
        ag::backward(y, g);
      });
      if (r >= a.warmup) forward.push_back(f), train.push_back(t);
    }
  } else {
    const Conv2dParams p = s.conv_params();
    const Tensor w = uniform({s.o, s.c, s.k, s.k}, -0.1, 0.1, gen, DType::Float32);
    const Tensor b = uniform({s.o}, -0.1, 0.1, gen, DType::Float32);
    const Tensor y0 = conv2d(x, w, b, p);
    const Tensor g = uniform(y0.shape(), -1.0, 1.0, gen, DType::Float32);
    gflop = s.conv_flop(a.batch) / 1e9;
    for (int64_t r = 0; r < a.warmup + a.reps; ++r) {
      double f = 0;
      const double t = time_ms([&] {
        Tensor y;
        f = time_ms([&] { y = conv2d(x, w, b, p); });
        conv2d_backward(g, x, w, p);
      });
      if (r >= a.warmup) forward.push_back(f), train.push_back(t);
    }
  }
  return {median(forward), median(train), gflop};
}

}  // namespace
}  // namespace moh

int main(int argc, char** argv) {
  using namespace moh;
  try {
    const Args a = parse(argc, argv);
    if (a.threads > 0) set_num_threads(int(a.threads));
    if (!a.json) {
      std::printf("moh_bench_conv: float32, batch %lld, %d threads, median of %lld (after %lld warm-up)\n",
                  (long long)a.batch, num_threads(), (long long)a.reps, (long long)a.warmup);
      std::printf("| layer | forward ms | forward GFLOP/s | forward + backward ms |\n| --- | --- | --- | --- |\n");
    }
    for (const auto& s : kAutoencoderLayers) {
      const auto t = time_layer(s, a);
      if (a.json)
        std::printf("{\"layer\": \"%s\", \"batch\": %lld, \"c\": %lld, \"h\": %lld, \"w\": %lld, \"o\": %lld, "
                    "\"k\": %lld, \"stride\": %lld, \"pad\": %lld, \"norm_groups\": %lld, \"forward_ms\": %.4f, "
                    "\"train_ms\": %.4f}\n",
                    s.name, (long long)a.batch, (long long)s.c, (long long)s.h, (long long)s.w, (long long)s.o,
                    (long long)s.k, (long long)s.stride, (long long)s.pad, (long long)s.norm_groups, t.forward_ms,
                    t.train_ms);
      else
        std::printf("| %s | %.2f | %s | %.2f |\n", s.name, t.forward_ms,
                    t.gflop > 0 ? std::to_string(int(t.gflop / t.forward_ms * 1e3)).c_str() : "-", t.train_ms);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
