// Memory-bound ops: softmax, layer_norm and cross_entropy forward and backward, and the row moves of
// MoH's sparse execution (index_select of rows and the index_add of its backward), as GB/s of the bytes
// each must move (inputs read + outputs written once) and as a share of copy bandwidth.
#include "bench/counters.h"
#include "core/factory.h"
#include "core/ops.h"

namespace moh {
namespace {

constexpr double kF32 = 4;

void BM_Softmax(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  Generator gen(0);
  Tensor x = normal({rows, cols}, 0, 1, gen);
  for (auto _ : state) benchmark::DoNotOptimize(softmax(x, -1));
  bench::set_byte_counters(state, 2 * kF32 * double(rows * cols));
}
BENCHMARK(BM_Softmax)->ArgNames({"rows", "cols"})->Args({8192, 256})->Args({4096, 1024})->Args({256, 32768})
    ->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_SoftmaxBackward(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  Generator gen(0);
  Tensor y = softmax(normal({rows, cols}, 0, 1, gen), -1), g = normal({rows, cols}, 0, 1, gen);
  for (auto _ : state) benchmark::DoNotOptimize(softmax_backward(g, y, -1));
  bench::set_byte_counters(state, 3 * kF32 * double(rows * cols));
}
BENCHMARK(BM_SoftmaxBackward)->ArgNames({"rows", "cols"})->Args({8192, 256})->Args({4096, 1024})
    ->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_LayerNorm(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  Generator gen(0);
  Tensor x = normal({rows, cols}, 0, 1, gen), w = ones({cols}), b = zeros({cols});
  for (auto _ : state) benchmark::DoNotOptimize(layer_norm(x, w, b, 1e-5));
  bench::set_byte_counters(state, 2 * kF32 * double(rows * cols));
}
BENCHMARK(BM_LayerNorm)->ArgNames({"rows", "cols"})->Args({8192, 384})->Args({4096, 768})
    ->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_LayerNormBackward(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  Generator gen(0);
  Tensor x = normal({rows, cols}, 0, 1, gen), w = ones({cols}), b = zeros({cols});
  Tensor g = normal({rows, cols}, 0, 1, gen);
  NormForward saved = layer_norm(x, w, b, 1e-5);
  for (auto _ : state) benchmark::DoNotOptimize(layer_norm_backward(g, x, saved, w, true));
  bench::set_byte_counters(state, 3 * kF32 * double(rows * cols));  // read x, grad; write grad_x
}
BENCHMARK(BM_LayerNormBackward)->ArgNames({"rows", "cols"})->Args({8192, 384})->Args({4096, 768})
    ->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_CrossEntropy(benchmark::State& state) {
  const int64_t rows = state.range(0), classes = state.range(1);
  Generator gen(0);
  Tensor logits = normal({rows, classes}, 0, 1, gen);
  Tensor target = full({rows}, 3, DType::Int64);
  for (auto _ : state) benchmark::DoNotOptimize(cross_entropy(logits, target, 0.1));
  bench::set_byte_counters(state, kF32 * double(rows * classes));  // logits read once
}
BENCHMARK(BM_CrossEntropy)->ArgNames({"rows", "classes"})->Args({4096, 1000})->Args({1024, 32000})
    ->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_CrossEntropyBackward(benchmark::State& state) {
  const int64_t rows = state.range(0), classes = state.range(1);
  Generator gen(0);
  Tensor logits = normal({rows, classes}, 0, 1, gen);
  Tensor target = zeros({rows}, DType::Int64);
  CrossEntropyForward fwd = cross_entropy(logits, target, 0.1);
  Tensor one = scalar_tensor(1.0);
  for (auto _ : state)
    benchmark::DoNotOptimize(cross_entropy_backward(one, logits, target, fwd.lse, 0.1));
  bench::set_byte_counters(state, 2 * kF32 * double(rows * classes));  // read logits, write grad
}
BENCHMARK(BM_CrossEntropyBackward)->ArgNames({"rows", "classes"})->Args({4096, 1000})->Args({1024, 32000})
    ->Unit(benchmark::kMicrosecond)->UseRealTime();

// A row permutation-like index: `picked` of `rows` rows, each picked row once, in a shuffled order (what
// MoH's packing by head produces for the query rows of [tokens * heads, head_dim]).
Tensor picked_rows(int64_t rows, int64_t picked) {
  Generator gen(0);
  return topk(uniform({rows}, 0, 1, gen), rows).indices.narrow(0, 0, picked).contiguous();
}

void BM_IndexSelectRows(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1), picked = rows * 3 / 4;
  Generator gen(0);
  Tensor x = normal({rows, cols}, 0, 1, gen), index = picked_rows(rows, picked);
  for (auto _ : state) benchmark::DoNotOptimize(index_select(x, 0, index));
  bench::set_byte_counters(state, 2 * kF32 * double(picked * cols));  // read the picked rows, write them
}
BENCHMARK(BM_IndexSelectRows)->ArgNames({"rows", "cols"})->Args({8192, 16})->Args({32768, 64})
    ->Unit(benchmark::kMicrosecond)->UseRealTime();

// The backward of index_select: the rows added into zeros of the source's shape (index_add into zeros,
// which clones them, and index_select_backward, which does not).
void BM_IndexAddRows(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1), picked = rows * 3 / 4;
  Generator gen(0);
  Tensor src = normal({picked, cols}, 0, 1, gen), index = picked_rows(rows, picked);
  const bool clone = state.range(2) == 0;
  for (auto _ : state)
    benchmark::DoNotOptimize(clone ? index_add(zeros({rows, cols}), 0, index, src)
                                   : index_select_backward(src, 0, index, rows));
  bench::set_byte_counters(state, kF32 * double(rows * cols + 2 * picked * cols));  // write all, read src
}
BENCHMARK(BM_IndexAddRows)->ArgNames({"rows", "cols", "backward_op"})->Args({8192, 16, 0})->Args({8192, 16, 1})
    ->Args({32768, 64, 0})->Args({32768, 64, 1})->Unit(benchmark::kMicrosecond)->UseRealTime();

// Strided copies with short runs: contiguous() of the attention's [B, H, T, Dh] heads back to [B, T, H, Dh]
// (the split of a fused projection's gradient does the same), and of a few columns of a wide row (the
// router's logits cut from the fused projection). GB/s of the bytes read and written once.
void BM_ContiguousHeads(benchmark::State& state) {
  const int64_t batch = state.range(0), tokens = state.range(1), heads = state.range(2), dh = state.range(3);
  Generator gen(0);
  const Tensor x = normal({batch, heads, tokens, dh}, 0, 1, gen).permute({0, 2, 1, 3});
  for (auto _ : state) benchmark::DoNotOptimize(x.contiguous());
  bench::set_byte_counters(state, 2 * kF32 * double(x.numel()));
}
BENCHMARK(BM_ContiguousHeads)->ArgNames({"batch", "tokens", "heads", "dh"})->Args({32, 16, 8, 16})
    ->Args({16, 256, 8, 16})->Args({4, 256, 32, 64})->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_ContiguousColumns(benchmark::State& state) {
  const int64_t rows = state.range(0), width = state.range(1), cols = state.range(2);
  Generator gen(0);
  const Tensor x = normal({rows, width}, 0, 1, gen).narrow(1, width - cols, cols);
  for (auto _ : state) benchmark::DoNotOptimize(x.contiguous());
  bench::set_byte_counters(state, 2 * kF32 * double(x.numel()));
}
BENCHMARK(BM_ContiguousColumns)->ArgNames({"rows", "width", "cols"})->Args({512, 400, 10})->Args({4096, 400, 10})
    ->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace moh
