// The row moves of MoH's sparse execution at the Fashion-MNIST ViT-tiny MoH-75 shape (batch 128 x 16
// tokens, 8 heads of 16, 2 shared, top 4 of 6 routed): pack_head_rows over the router's selection, the
// gather of the active query rows (index_select by pair and its backward) and gate_rows (gated rows
// scattered into the zero-filled [pairs, Dh] input of the dense W_O, and its backward). Each runs once per
// MoH layer per training step, so these times are what the ViT step pays per layer beside attention.
#include <benchmark/benchmark.h>

#include "core/factory.h"
#include "core/ops.h"

namespace moh {
namespace {

constexpr int64_t kBatch = 128, kTokens = 16, kHeads = 8, kShared = 2, kTopk = 4, kHeadDim = 16;
constexpr int64_t kPairs = kBatch * kTokens * kHeads;

// The router's selection of a random batch and its packed rows.
struct RoutedRows {
  Tensor topk;
  HeadRows rows;
  RoutedRows() {
    Generator gen(0);
    const Tensor scores = uniform({kBatch * kTokens, kHeads - kShared}, 0, 1, gen);
    topk = moh::topk(scores, kTopk).indices.contiguous();
    rows = pack_head_rows(topk, kBatch, kHeads, kShared);
  }
  int64_t count() const { return rows.pair_index.numel(); }
};

void BM_PackHeadRows(benchmark::State& state) {
  const RoutedRows routed;
  for (auto _ : state) benchmark::DoNotOptimize(pack_head_rows(routed.topk, kBatch, kHeads, kShared));
}
BENCHMARK(BM_PackHeadRows)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_SelectPairRows(benchmark::State& state) {
  const RoutedRows routed;
  Generator gen(1);
  const Tensor q = normal({kPairs, kHeadDim}, 0, 1, gen);
  for (auto _ : state) benchmark::DoNotOptimize(index_select(q, 0, routed.rows.pair_index));
}
BENCHMARK(BM_SelectPairRows)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_SelectPairRowsBackward(benchmark::State& state) {
  const RoutedRows routed;
  Generator gen(1);
  const Tensor grad = normal({routed.count(), kHeadDim}, 0, 1, gen);
  for (auto _ : state) benchmark::DoNotOptimize(index_select_backward(grad, 0, routed.rows.pair_index, kPairs));
}
BENCHMARK(BM_SelectPairRowsBackward)->Unit(benchmark::kMicrosecond)->UseRealTime();

// scatter 1: the dense-W_O path's zero-filled [pairs, Dh]; 0: the gathered path's [rows, Dh].
void BM_GateRows(benchmark::State& state) {
  const RoutedRows routed;
  const bool scatter = state.range(0) != 0;
  Generator gen(1);
  const Tensor o = normal({routed.count(), kHeadDim}, 0, 1, gen), gates = uniform({kPairs}, 0, 1, gen);
  for (auto _ : state) benchmark::DoNotOptimize(gate_rows(o, gates, routed.rows.pair_index, scatter));
}
BENCHMARK(BM_GateRows)->ArgName("scatter")->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_GateRowsBackward(benchmark::State& state) {
  const RoutedRows routed;
  const bool scatter = state.range(0) != 0;
  Generator gen(1);
  const Tensor o = normal({routed.count(), kHeadDim}, 0, 1, gen), gates = uniform({kPairs}, 0, 1, gen);
  const Tensor grad = normal({scatter ? kPairs : routed.count(), kHeadDim}, 0, 1, gen);
  for (auto _ : state)
    benchmark::DoNotOptimize(gate_rows_backward(grad, o, gates, routed.rows.pair_index, scatter));
}
BENCHMARK(BM_GateRowsBackward)->ArgName("scatter")->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace moh
