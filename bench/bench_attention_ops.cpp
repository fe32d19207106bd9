// The attention ops alone (forward, backward; dense [B, H, T, Dh] queries and MoH's packed rows at 75%
// of the heads) at the shapes the models run: the Fashion-MNIST ViT-tiny (128 images x 16 patches,
// 8 heads of 16: 1,024 groups of 16 rows, where per-group scheduling costs show), the KJV LLM (16 x 256
// characters, 8 heads of 16, causal) and the paper's 32 heads of 64 (4 x 256 tokens). Packed rows: the
// first quarter of the heads shared, each token's top 2/3 of the rest, random. Milliseconds per call.
#include <benchmark/benchmark.h>

#include <cmath>

#include "core/factory.h"
#include "core/ops.h"

namespace moh {
namespace {

struct Shape4 {
  int64_t batch, heads, tokens, head_dim;
  bool causal;
};

Shape4 shape_of(const benchmark::State& state) {
  return {state.range(0), state.range(1), state.range(2), state.range(3), state.range(4) != 0};
}

struct Operands {
  Tensor q, k, v, grad_out;
  HeadRows rows;  // MoH-75 packing: heads / 4 shared, top 2/3 of the routed
  Tensor q_rows, grad_rows;
};

Operands operands(const Shape4& s) {
  Generator gen(0);
  const Shape dense{s.batch, s.heads, s.tokens, s.head_dim};
  Operands o{normal(dense, 0, 1, gen), normal(dense, 0, 1, gen), normal(dense, 0, 1, gen), normal(dense, 0, 1, gen)};
  const int64_t shared = s.heads / 4, routed = s.heads - shared;
  const Tensor picks = moh::topk(uniform({s.batch * s.tokens, routed}, 0, 1, gen), 2 * routed / 3).indices;
  o.rows = pack_head_rows(picks, s.batch, s.heads, shared);
  const int64_t r = o.rows.token_index.numel();
  o.q_rows = normal({r, s.head_dim}, 0, 1, gen);
  o.grad_rows = normal({r, s.head_dim}, 0, 1, gen);
  return o;
}

double scale_of(const Shape4& s) { return 1.0 / std::sqrt(double(s.head_dim)); }

void BM_AttentionForward(benchmark::State& state) {
  const Shape4 s = shape_of(state);
  const Operands o = operands(s);
  for (auto _ : state) benchmark::DoNotOptimize(attention(o.q, o.k, o.v, scale_of(s), s.causal));
}

void BM_AttentionBackward(benchmark::State& state) {
  const Shape4 s = shape_of(state);
  const Operands o = operands(s);
  const AttentionForward f = attention(o.q, o.k, o.v, scale_of(s), s.causal);
  for (auto _ : state)
    benchmark::DoNotOptimize(attention_backward(o.grad_out, o.q, o.k, o.v, f, scale_of(s), s.causal));
}

void BM_AttentionPackedForward(benchmark::State& state) {
  const Shape4 s = shape_of(state);
  const Operands o = operands(s);
  for (auto _ : state)
    benchmark::DoNotOptimize(
        attention_packed(o.q_rows, o.rows.row_offsets, o.rows.q_pos, o.k, o.v, scale_of(s), s.causal, s.heads));
}

void BM_AttentionPackedBackward(benchmark::State& state) {
  const Shape4 s = shape_of(state);
  const Operands o = operands(s);
  const AttentionForward f =
      attention_packed(o.q_rows, o.rows.row_offsets, o.rows.q_pos, o.k, o.v, scale_of(s), s.causal, s.heads);
  for (auto _ : state)
    benchmark::DoNotOptimize(attention_packed_backward(o.grad_rows, o.q_rows, o.rows.row_offsets, o.rows.q_pos, o.k,
                                                       o.v, f, scale_of(s), s.causal, s.heads));
}

void model_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"B", "H", "T", "Dh", "causal"})
      ->Args({128, 8, 16, 16, 0})   // ViT-tiny, Fashion-MNIST
      ->Args({16, 8, 256, 16, 1})   // KJV LLM
      ->Args({4, 32, 256, 64, 0})   // 32 heads of 64
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}
BENCHMARK(BM_AttentionForward)->Apply(model_shapes);
BENCHMARK(BM_AttentionBackward)->Apply(model_shapes);
BENCHMARK(BM_AttentionPackedForward)->Apply(model_shapes);
BENCHMARK(BM_AttentionPackedBackward)->Apply(model_shapes);

}  // namespace
}  // namespace moh
