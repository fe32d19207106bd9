// GEMM throughput through the op API (OpenBLAS sgemm underneath) at square and transformer shapes,
// including a transposed operand (the Linear layer's x @ W^T) and a batched attention-score product.
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
