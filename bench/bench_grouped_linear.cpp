// The grouped projections of MoH's gathered execution (gather_linear, scatter_linear and their
// backwards) at the attention benchmark's layer shape: 1024 tokens of dim 2048, 28 routed heads of 64,
// each token routed to `topk` of them (20: 75% of 32 heads with 4 shared). GFLOP/s counts only the
// routed rows' products, so it reads directly against BM_GroupedDenseEquivalent, the one dense GEMM
// (OpenBLAS) of every routed head that the dense path runs instead.
#include "bench/counters.h"
#include "core/factory.h"
#include "core/ops.h"

namespace moh {
namespace {

constexpr int64_t kTokens = 1024, kDim = 2048, kHeadDim = 64, kGroups = 28;

// Each token picks `topk` distinct groups at random; rows packed group by group, tokens ascending.
HeadRows random_routing(int64_t topk) {
  Generator gen(5);
  const Tensor picks = moh::topk(uniform({kTokens, kGroups}, 0, 1, gen), topk).indices;
  return pack_head_rows(picks, /*batch=*/1, kGroups, /*shared=*/0);
}

int64_t rows(const HeadRows& r) { return r.token_index.numel(); }
double routed_flops(const HeadRows& r) { return 2.0 * double(rows(r)) * double(kDim) * double(kHeadDim); }

void BM_GatherLinear(benchmark::State& state) {
  const HeadRows r = random_routing(state.range(0));
  Generator gen(0);
  const Tensor x = normal({kTokens, kDim}, 0, 1, gen), w = normal({kGroups, kHeadDim, kDim}, 0, 1, gen);
  for (auto _ : state) benchmark::DoNotOptimize(gather_linear(x, r.token_index, r.head_offsets, w, {}));
  bench::set_flop_counters(state, routed_flops(r));
}

void BM_GatherLinearBackward(benchmark::State& state) {
  const HeadRows r = random_routing(state.range(0));
  Generator gen(0);
  const Tensor x = normal({kTokens, kDim}, 0, 1, gen), w = normal({kGroups, kHeadDim, kDim}, 0, 1, gen);
  const Tensor grad_out = normal({rows(r), kHeadDim}, 0, 1, gen);
  for (auto _ : state)
    benchmark::DoNotOptimize(gather_linear_backward(grad_out, x, r.token_index, r.head_offsets, w, false));
  bench::set_flop_counters(state, 2 * routed_flops(r));
}

void BM_ScatterLinear(benchmark::State& state) {
  const HeadRows r = random_routing(state.range(0));
  Generator gen(0);
  const Tensor src = normal({rows(r), kHeadDim}, 0, 1, gen), w = normal({kGroups, kDim, kHeadDim}, 0, 1, gen);
  for (auto _ : state) benchmark::DoNotOptimize(scatter_linear(src, r.token_index, r.head_offsets, w, kTokens));
  bench::set_flop_counters(state, routed_flops(r));
}

void BM_ScatterLinearBackward(benchmark::State& state) {
  const HeadRows r = random_routing(state.range(0));
  Generator gen(0);
  const Tensor src = normal({rows(r), kHeadDim}, 0, 1, gen), w = normal({kGroups, kDim, kHeadDim}, 0, 1, gen);
  const Tensor grad_out = normal({kTokens, kDim}, 0, 1, gen);
  for (auto _ : state)
    benchmark::DoNotOptimize(scatter_linear_backward(grad_out, src, r.token_index, r.head_offsets, w));
  bench::set_flop_counters(state, 2 * routed_flops(r));
}

// The dense path's query projection of every routed head: x [tokens, dim] @ W^T [dim, groups * 64].
void BM_GroupedDenseEquivalent(benchmark::State& state) {
  Generator gen(0);
  const Tensor x = normal({kTokens, kDim}, 0, 1, gen), w = normal({kGroups * kHeadDim, kDim}, 0, 1, gen);
  for (auto _ : state) benchmark::DoNotOptimize(matmul(x, w.t()));
  bench::set_flop_counters(state, 2.0 * double(kTokens) * double(kDim) * double(kGroups * kHeadDim));
}

void routed_shares(benchmark::internal::Benchmark* b) {
  b->ArgNames({"topk"})->Arg(25)->Arg(20)->Arg(12)->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_GatherLinear)->Apply(routed_shares);
BENCHMARK(BM_GatherLinearBackward)->Apply(routed_shares);
BENCHMARK(BM_ScatterLinear)->Apply(routed_shares);
BENCHMARK(BM_ScatterLinearBackward)->Apply(routed_shares);
BENCHMARK(BM_GroupedDenseEquivalent)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace moh
