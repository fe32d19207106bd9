// The entries of the op-test table (op_table.h) and the helpers that run one.
#include "tests/core/op_table.h"

#include "core/factory.h"
#include "core/random.h"

namespace moh::test {
namespace {

using ag::Variable;
using Inputs = std::vector<Variable>;
using Args = std::vector<int64_t>;

// CUDA bounds of the resampling ops: float32 within a few roundings, 16-bit types within their output
// rounding. (A function, not a constant: op_table() runs during static initialisation.)
std::vector<ParityBound> resample_cuda_bounds() {
  return {{DType::Float32, 1e-5, 1e-6}, {DType::Float64, 1e-12, 1e-12}, {DType::BFloat16, 1.6e-2, 1e-4},
          {DType::Float16, 2e-3, 1e-5}};
}

// args: stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups; inputs x, weight[, bias].
OpEntry conv2d_entry() {
  const Args same{1, 1, 1, 1, 1, 1, 1}, valid{1, 1, 0, 0, 1, 1, 1};
  return {
      .name = "conv2d",
      .forward = [](const Inputs& in, const Args& a) {
        const Conv2dParams p{a[0], a[1], a[2], a[3], a[4], a[5], a[6]};
        return ag::conv2d(in[0], in[1], in.size() > 2 ? in[2] : Variable(), p);
      },
      .cases = {{"3x3 same", {{2, 3, 7, 6}, {4, 3, 3, 3}, {4}}, same},
                {"stride 2 pad 1", {{2, 4, 5, 4}, {2, 4, 3, 3}, {2}}, {2, 2, 1, 1, 1, 1, 1}},
                {"dilation 2 pad 2", {{2, 4, 5, 4}, {2, 4, 3, 3}, {2}}, {1, 1, 2, 2, 2, 2, 1}},
                {"groups 2", {{2, 4, 5, 4}, {2, 2, 3, 3}, {2}}, {1, 1, 1, 1, 1, 1, 2}},
                {"depthwise", {{2, 3, 5, 5}, {3, 1, 3, 3}, {3}}, {1, 1, 1, 1, 1, 1, 3}},
                {"pointwise", {{3, 3, 3, 2}, {2, 3, 1, 1}, {2}}, valid},
                {"rectangular kernel, uneven stride, no bias", {{1, 2, 5, 4}, {3, 2, 2, 3}}, {2, 1, 0, 1, 1, 1, 1}},
                {"padding beyond the kernel", {{1, 2, 3, 3}, {2, 2, 2, 2}, {2}}, {1, 1, 3, 2, 1, 1, 1}},
                {"1x1 stride 2", {{2, 3, 6, 6}, {2, 3, 1, 1}, {2}}, {2, 2, 0, 0, 1, 1, 1}}},
      .large_cases = {{"16x16 planes", {{2, 3, 16, 16}, {8, 3, 3, 3}, {8}}, same},
                      {"chunked with a partial last chunk", {{61, 2, 6, 6}, {3, 2, 3, 3}, {3}}, valid},
                      // 2048 / (4 * 4) = 128 samples per chunk: two chunks, the second partial.
                      {"pointwise, chunked", {{130, 3, 4, 4}, {2, 3, 1, 1}, {2}}, valid},
                      {"stride 2, odd planes", {{3, 5, 17, 12}, {7, 5, 3, 3}, {7}}, {2, 2, 1, 1, 1, 1, 1}},
                      {"dilation 2, uneven padding", {{2, 4, 15, 15}, {6, 4, 3, 3}, {6}}, {1, 1, 2, 1, 2, 2, 1}},
                      {"groups 4", {{2, 8, 9, 9}, {12, 2, 3, 3}, {12}}, {1, 1, 1, 1, 1, 1, 4}},
                      {"depthwise 8x8", {{2, 6, 8, 8}, {6, 1, 3, 3}, {6}}, {1, 1, 1, 1, 1, 1, 6}},
                      // Chunk GEMMs above OpenBLAS's 2^18 multiply-adds run on every thread, and the
                      // split changes their bits (the batch sums' too): no thread-count promise here.
                      {"32 -> 32 channels at 32x32", {{2, 32, 32, 32}, {32, 32, 3, 3}, {32}}, same, false},
                      {"pointwise 32 -> 64", {{8, 32, 8, 8}, {64, 32, 1, 1}, {64}}, valid, false}},
      // float32 runs on oneDNN, whose weight and bias gradients split the batch sum over threads
      // (tests/core/test_conv_onednn.cpp checks the forward and input gradient it keeps); the promise
      // is im2col's, which float64 takes.
      .thread_count_dtype = DType::Float64,
      .float32_rtol = 2e-5,
      .strided_rtol = 0,
      .sum_of_products = true,
      .cuda = {{DType::Float32, 1e-5, 1e-6}, {DType::Float64, 1e-12, 1e-12}, {DType::BFloat16, 1.6e-2, 1e-6},
               {DType::Float16, 2e-3, 1e-6}},
      .cuda_same_bits = false,
  };
}

// Both resampling ops sum each output in double, in one fixed order, on either backend.
// args: scale.
OpEntry upsample_entry() {
  return {
      .name = "upsample_nearest2d",
      .forward = [](const Inputs& in, const Args& a) { return ag::upsample_nearest2d(in[0], a[0]); },
      .cases = {{"scale 1", {{2, 3, 3, 5}}, {1}},
                {"scale 2", {{2, 3, 3, 5}}, {2}},
                {"scale 3, odd sizes", {{1, 2, 5, 3}}, {3}},
                {"scale 4, one row", {{3, 2, 1, 7}}, {4}},
                {"one pixel", {{1, 1, 1, 1}}, {2}}},
      .large_cases = {{"64x64 planes", {{4, 8, 64, 64}}, {2}}, {"odd planes, scale 3", {{2, 5, 33, 17}}, {3}}},
      .float32_rtol = 1e-6,
      .strided_rtol = 0,
      .sum_of_products = true,
      .cuda = resample_cuda_bounds(),
      .cuda_same_bits = true,
  };
}

// args: kernel, stride.
OpEntry avg_pool_entry() {
  return {
      .name = "avg_pool2d",
      .forward = [](const Inputs& in, const Args& a) { return ag::avg_pool2d(in[0], a[0], a[1]); },
      .cases = {{"2/2", {{2, 2, 6, 6}}, {2, 2}},
                {"3/2 overlapping", {{2, 2, 5, 7}}, {3, 2}},
                {"3/1", {{1, 2, 5, 5}}, {3, 1}},
                {"1/1", {{1, 2, 3, 4}}, {1, 1}},
                {"1/2 with gaps", {{1, 3, 5, 3}}, {1, 2}},
                {"2/3 with gaps and leftovers", {{2, 2, 7, 5}}, {2, 3}},
                {"4/4 floor mode", {{1, 2, 9, 8}}, {4, 4}},
                {"5/2 non-square", {{1, 2, 5, 9}}, {5, 2}}},
      .large_cases = {{"64x64 planes, 3/2", {{4, 8, 64, 64}}, {3, 2}},
                      {"odd planes, 3/1", {{2, 5, 33, 17}}, {3, 1}},
                      {"16x16 planes, 4/4", {{3, 4, 16, 16}}, {4, 4}}},
      .float32_rtol = 1e-6,
      .strided_rtol = 0,
      .sum_of_products = true,
      .cuda = resample_cuda_bounds(),
      .cuda_same_bits = true,
  };
}

// args: groups; inputs x[, weight, bias].
OpEntry group_norm_entry() {
  return {
      .name = "group_norm",
      .forward = [](const Inputs& in, const Args& a) {
        return in.size() == 3 ? ag::group_norm(in[0], a[0], in[1], in[2]) : ag::group_norm(in[0], a[0], {}, {});
      },
      .cases = {{"2 groups, affine", {{2, 4, 3, 2}, {4}, {4}}, {2}},
                {"3-D input, no affine", {{2, 3, 5}}, {3}},
                {"one group", {{1, 3, 2, 2}, {3}, {3}}, {1}},
                {"one group per channel", {{2, 4, 2, 3}, {4}, {4}}, {4}}},
      .large_cases = {{"16x16 planes, 8 groups", {{4, 32, 16, 16}, {32}, {32}}, {8}},
                      {"32x32 planes, 32 groups", {{2, 64, 32, 32}, {64}, {64}}, {32}}},
      .float32_rtol = 1e-5,
      .strided_rtol = 1e-12,  // the bias gradient sums the upstream gradient in its memory order
      .sum_of_products = false,
      .cuda = {{DType::Float32, 1e-5, 1e-6}, {DType::Float64, 1e-10, 1e-12}, {DType::BFloat16, 1.6e-2, 1e-3},
               {DType::Float16, 2e-3, 1e-4}},
      .cuda_same_bits = false,
  };
}

// args: heads, shared, topk; input logits [N, columns]. Both differentiable outputs, gates and
// probabilities, side by side (eps 1e-6; the selection is fixed for these seeds, away from ties).
OpEntry moh_route_entry() {
  return {
      .name = "moh_route",
      .forward = [](const Inputs& in, const Args& a) {
        const ag::Route r = ag::moh_route(in[0], a[0], a[1], a[2], 1e-6);
        return ag::cat({r.gates, r.probs}, 1);
      },
      .cases = {{"2 shared of 8, top 4", {{5, 10}}, {8, 2, 4}},
                {"1 shared (no shared logits), top 2 of 5", {{4, 7}}, {6, 1, 2}},
                {"no shared heads, top 3 of 6", {{4, 6}}, {6, 0, 3}},
                {"3 shared, top 1 of 2", {{3, 7}}, {5, 3, 1}}},
      .large_cases = {{"LLM-like: 4 shared of 32, top 24", {{2048, 34}}, {32, 4, 24}},
                      {"ViT-like: 2 shared of 8, top 4", {{4093, 10}}, {8, 2, 4}}},  // a short last block
      .float32_rtol = 1e-5,
      .strided_rtol = 0,  // the op reads a contiguous copy
      .sum_of_products = false,
      .cuda = {{DType::Float32, 1e-5, 1e-6}, {DType::Float64, 1e-10, 1e-12}, {DType::BFloat16, 1.6e-2, 1e-3},
               {DType::Float16, 2e-3, 1e-4}},
      .cuda_same_bits = false,
  };
}

// args: scatter (0/1), stride, offset; inputs rows [R, D], gates [P]. Row r names pair
// (offset + r * stride) % P (stride coprime to P, so the pairs are distinct).
OpEntry gate_rows_entry() {
  return {
      .name = "gate_rows",
      .forward = [](const Inputs& in, const Args& a) {
        const int64_t rows = in[0].size(0), pairs = in[1].size(0);
        std::vector<int64_t> index(static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r) index[size_t(r)] = (a[2] + r * a[1]) % pairs;
        return ag::gate_rows(in[0], in[1], from_vector(index, {rows}, DType::Int64, in[0].device()), a[0] != 0);
      },
      .cases = {{"scattered, 5 of 8 pairs", {{5, 3}, {8}}, {1, 3, 2}},
                {"in row order, 4 of 6 pairs", {{4, 2}, {6}}, {0, 5, 1}},
                {"scattered, every pair", {{6, 4}, {6}}, {1, 1, 0}},
                {"in row order, one column", {{3, 1}, {7}}, {0, 2, 4}}},
      .large_cases = {{"LLM-like rows of 64, scattered", {{3000, 64}, {4096}}, {1, 7, 3}},
                      {"ViT-like rows of 16, in row order", {{1536, 16}, {2048}}, {0, 3, 5}}},
      .float32_rtol = 1e-6,
      .strided_rtol = 0,  // the op reads contiguous copies
      .sum_of_products = true,
      .cuda = {{DType::Float32, 1e-5, 1e-6}, {DType::Float64, 1e-12, 1e-12}, {DType::BFloat16, 1.6e-2, 1e-3},
               {DType::Float16, 2e-3, 1e-4}},
      .cuda_same_bits = false,  // grad_gates: float32 sums in float on CUDA, in double on the CPU
  };
}

Tensor permuted(const Tensor& t, uint64_t) {
  if (t.dim() < 2) return t;
  std::vector<int64_t> reversed(size_t(t.dim()));
  for (int64_t d = 0; d < t.dim(); ++d) reversed[size_t(d)] = t.dim() - 1 - d;
  return t.permute(reversed).contiguous().permute(reversed);
}

Tensor sliced(const Tensor& t, uint64_t seed) {
  Shape doubled = t.shape();
  for (int64_t& n : doubled) n *= 2;
  Tensor view = random_like(zeros(doubled, t.dtype(), t.device()), seed);
  for (int64_t d = 0; d < t.dim(); ++d) view = view.slice(d, 1, doubled[size_t(d)], 2);
  return view;
}

Tensor broadcast(const Tensor& t, uint64_t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1) return t.slice(d, 0, 1).expand(t.shape());
  return t;
}

}  // namespace

const std::vector<Layout>& strided_layouts() {
  static const std::vector<Layout> layouts = {
      {"permuted", permuted, false}, {"sliced", sliced, false}, {"broadcast", broadcast, true}};
  return layouts;
}

std::vector<Tensor> with_layout(const Layout& layout, const std::vector<Tensor>& inputs, uint64_t seed) {
  std::vector<Tensor> out;
  for (const Tensor& t : inputs) out.push_back(layout.make(t, seed++));
  return out;
}

const std::vector<OpEntry>& op_table() {
  static const std::vector<OpEntry> table = {conv2d_entry(), upsample_entry(), avg_pool_entry(), group_norm_entry(),
                                             moh_route_entry(), gate_rows_entry()};
  return table;
}

std::string describe_case(const OpEntry& op, const OpCase& c) {
  std::string s = op.name + " (" + c.name + "):";
  for (const Shape& shape : c.inputs) s += " " + shape_str(shape);
  return s;
}

std::vector<Tensor> op_inputs(const OpCase& c, DType dtype, uint64_t seed) {
  std::vector<Tensor> out;
  for (const Shape& shape : c.inputs) {
    Generator gen(seed++);
    out.push_back(uniform(shape, -1.0, 1.0, gen, DType::Float64).to(dtype));
  }
  return out;
}

Tensor random_like(const Tensor& out, uint64_t seed) {
  Generator gen(seed);
  return uniform(out.shape(), -1.0, 1.0, gen, DType::Float64).to(out.dtype()).to(out.device());
}

OpResult run_op(const OpEntry& entry, const OpCase& c, const std::vector<Tensor>& inputs,
                const std::function<Tensor(const Tensor& out)>& upstream) {
  std::vector<Variable> leaves;
  for (const Tensor& t : inputs) leaves.emplace_back(t, true);
  const Variable out = entry.forward(leaves, c.args);
  ag::backward(out, upstream(out.data()));
  OpResult r{out.data(), {}};
  for (const Variable& leaf : leaves) r.grads.push_back(leaf.grad());
  return r;
}

std::string op_entry_name(const ::testing::TestParamInfo<OpEntry>& info) { return info.param.name; }

void PrintTo(const OpEntry& entry, std::ostream* os) { *os << entry.name; }

}  // namespace moh::test
