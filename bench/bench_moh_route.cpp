// MoH's learned router (moh_route and its backward) over a batch of tokens, as the time per token:
// the per-token softmaxes, top-k and gates are scalar work that the ViT and LLM steps pay per layer.
// Shapes: ViT-tiny MoH-75 (8 heads, 2 shared, top 4 of 6), the KJV LLM at 75% (8 heads, 2 shared,
// top 4 of 6), the GPU benchmark's LLM (12 heads, 3 shared, top 6 of 9) and a 32-head layer (4 shared,
// top 21 of 28, ~78%).
#include <benchmark/benchmark.h>

#include "core/factory.h"
#include "core/math/moh_route_math.h"
#include "core/ops.h"

namespace moh {
namespace {

constexpr double kEps = 1e-6;

Tensor route_logits(int64_t tokens, int64_t heads, int64_t shared) {
  Generator gen(0);
  return normal({tokens, RouteShape{heads, shared, 1}.columns()}, 0, 1, gen);
}

void set_token_counter(benchmark::State& state, int64_t tokens) {
  state.counters["per_token"] = benchmark::Counter(double(tokens) * double(state.iterations()),
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_MoHRoute(benchmark::State& state) {
  const int64_t tokens = state.range(0), heads = state.range(1), shared = state.range(2), k = state.range(3);
  const Tensor logits = route_logits(tokens, heads, shared);
  for (auto _ : state) benchmark::DoNotOptimize(moh_route(logits, heads, shared, k, kEps));
  set_token_counter(state, tokens);
}

void BM_MoHRouteBackward(benchmark::State& state) {
  const int64_t tokens = state.range(0), heads = state.range(1), shared = state.range(2), k = state.range(3);
  const Tensor logits = route_logits(tokens, heads, shared);
  Generator gen(1);
  const Tensor grad_gates = normal({tokens, heads}, 0, 1, gen), grad_probs = normal({tokens, heads - shared}, 0, 1, gen);
  for (auto _ : state)
    benchmark::DoNotOptimize(moh_route_backward(grad_gates, grad_probs, logits, heads, shared, k, kEps));
  set_token_counter(state, tokens);
}

void route_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"tokens", "heads", "shared", "topk"})->Args({1024, 8, 2, 4})->Args({8192, 8, 2, 4})
      ->Args({8192, 12, 3, 6})->Args({8192, 32, 4, 21})->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK(BM_MoHRoute)->Apply(route_shapes);
BENCHMARK(BM_MoHRouteBackward)->Apply(route_shapes);

}  // namespace
}  // namespace moh
