// GEMM throughput through the op API (OpenBLAS sgemm underneath) at square and transformer shapes,
// including a transposed operand (the Linear layer's x @ W^T) and a batched attention-score product.
// BM_LinearStep runs the three GEMMs of a Linear's training step in turn (y = x @ W^T, grad_x = g @ W,
// grad_W = g^T @ x), as a step alternates shapes: the case where OpenBLAS's own threads were slowest.
#include "bench/counters.h"
#include "core/ops.h"

namespace moh {
namespace {

void BM_Matmul(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const bool transposed_b = state.range(3) != 0;
  Generator gen(0);
  Tensor a = normal({m, k}, 0, 1, gen);
  Tensor b = transposed_b ? normal({n, k}, 0, 1, gen).t() : normal({k, n}, 0, 1, gen);
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b));
  bench::set_flop_counters(state, 2.0 * double(m) * double(k) * double(n));
}
BENCHMARK(BM_Matmul)
    ->ArgNames({"M", "K", "N", "Bt"})
    ->Args({512, 512, 512, 0})
    ->Args({1024, 1024, 1024, 0})
    ->Args({2048, 384, 1152, 1})   // ViT-S qkv: 2048 tokens x 384 -> 3*384, weight transposed
    ->Args({2048, 1536, 384, 1})   // ViT-S MLP down-projection
    ->Args({8192, 64, 64, 0})      // tall-skinny
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_LinearStep(benchmark::State& state) {
  const int64_t rows = state.range(0), in = state.range(1), out = state.range(2);
  Generator gen(0);
  const Tensor x = normal({rows, in}, 0, 1, gen), w = normal({out, in}, 0, 1, gen), g = normal({rows, out}, 0, 1, gen);
  for (auto _ : state) {
    benchmark::DoNotOptimize(matmul(x, w.t()));
    benchmark::DoNotOptimize(matmul(g, w));
    benchmark::DoNotOptimize(matmul(g.t(), x));
  }
  bench::set_flop_counters(state, 3 * 2.0 * double(rows) * double(in) * double(out));
}
BENCHMARK(BM_LinearStep)
    ->ArgNames({"rows", "in", "out"})
    ->Args({2048, 128, 384})   // ViT-tiny qkv (Fashion-MNIST preset: batch 128 x 16 patches)
    ->Args({2048, 128, 128})   // ViT-tiny output projection
    ->Args({2048, 128, 10})    // ViT-tiny MoH router + gates
    ->Args({2048, 384, 1152})  // ViT-S qkv
    ->Args({1024, 2048, 2048}) // a 2048-wide layer's projection at 1024 tokens
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_BatchedScores(benchmark::State& state) {
  const int64_t batch = state.range(0), t = state.range(1), d = 64;
  Generator gen(0);
  Tensor q = normal({batch, t, d}, 0, 1, gen);
  Tensor k = normal({batch, t, d}, 0, 1, gen);
  for (auto _ : state) benchmark::DoNotOptimize(bmm(q, k.transpose(1, 2)));
  bench::set_flop_counters(state, 2.0 * double(batch) * double(t) * double(t) * double(d));
}
BENCHMARK(BM_BatchedScores)->ArgNames({"B*H", "T"})->Args({96, 256})->Args({32, 512})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace moh
