// CUDA vs CPU parity of the reductions (sum, mean, amax, amin, variance, argmax, sum_to_shape):
// every dim set (none = all, single, several, negative) with and without keepdim; permuted,
// transposed, sliced and broadcast (stride 0) inputs; both kernel layouts (reduced dim innermost
// or kept dim innermost) with and without the chunked second pass; int32/int64 sums; NaN and ties
// in amax/amin/argmax; float64; bfloat16/float16; empty and 0-d inputs; run-to-run bitwise
// reproducibility.
#include <cmath>
#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "tests/core/cuda/parity.h"

namespace moh {
namespace {

using test::cpu;
using test::gpu;
using test::rand_t;

using ReduceFn = Tensor (*)(const Tensor&, const std::vector<int64_t>&, bool);

struct Named {
  const char* name;
  ReduceFn fn;
};
const Named kOps[] = {{"sum", &sum}, {"mean", &mean}, {"amax", &amax}, {"amin", &amin}};

std::string label(const char* op, const std::vector<int64_t>& dims, bool keepdim, const Tensor& x) {
  std::string s = std::string(op) + " dims {";
  for (int64_t d : dims) s += std::to_string(d) + ",";
  return s + "} keepdim " + std::to_string(keepdim) + " of " + describe(x);
}

// Every op over `dims` of x (a CPU tensor) and of xg (the same values on the GPU, in any layout),
// to rtol / atol.
void check_all_ops(const Tensor& x, const Tensor& xg, const std::vector<int64_t>& dims, double rtol, double atol) {
  for (bool keepdim : {false, true})
    for (const Named& op : kOps) {
      if (std::string(op.name) == "mean" && (x.dtype() == DType::Int32 || x.dtype() == DType::Int64)) continue;
      test::expect_close(cpu(op.fn(xg, dims, keepdim)), op.fn(x, dims, keepdim), rtol, atol,
                         label(op.name, dims, keepdim, xg));
    }
}
void check_all_ops(const Tensor& x, const std::vector<int64_t>& dims, double rtol, double atol) {
  check_all_ops(x, gpu(x), dims, rtol, atol);
}

const std::vector<std::vector<int64_t>> kDimSets = {{}, {0}, {1}, {2}, {-1}, {0, 2}, {-3, -1}, {1, 2}, {0, 1, 2}};

TEST(CudaParityReduce, Float32EveryDimSet) {
  MOH_REQUIRE_GPU();
  const Tensor x = rand_t({5, 33, 7}, 1);
  for (const auto& dims : kDimSets) check_all_ops(x, dims, 1e-5, 1e-6);
}

// The views are taken on each device (Tensor::to makes its result contiguous), so the GPU kernels
// see the strides.
TEST(CudaParityReduce, NonContiguousInputs) {
  MOH_REQUIRE_GPU();
  const Tensor base = rand_t({6, 35, 9}, 2), small = rand_t({1, 40, 1}, 3);
  const Tensor transposed = base.transpose(-2, -1).contiguous();  // viewed back: last two dims swapped in memory
  using View = Tensor (*)(const Tensor&);
  const std::pair<const Tensor*, View> views[] = {
      {&base, [](const Tensor& t) { return t.permute({2, 0, 1}); }},
      {&transposed, [](const Tensor& t) { return t.transpose(-2, -1); }},
      {&base, [](const Tensor& t) { return t.slice(1, 1, 35, 3); }},
      {&small, [](const Tensor& t) { return t.expand({50, 40, 6}); }},  // stride 0 on dims 0 and 2
  };
  for (const auto& [t, view] : views) {
    const Tensor xg = view(gpu(*t));
    ASSERT_FALSE(xg.is_contiguous());
    for (const auto& dims : kDimSets) check_all_ops(view(*t), xg, dims, 1e-5, 1e-6);
  }
}

// Reduced ranges longer than a block, outputs fewer than a tile (chunked second pass), and many
// outputs along memory (kept dim innermost).
TEST(CudaParityReduce, LongRangesAndBothLayouts) {
  MOH_REQUIRE_GPU();
  const std::pair<Shape, std::vector<int64_t>> cases[] = {
      {{5000}, {}},          {{1000000}, {0}},  {{3, 100000}, {1}}, {{100000, 3}, {0}}, {{2000, 1000}, {0}},
      {{2000, 1000}, {1}},   {{1, 5000}, {1}},  {{33, 1}, {1}},     {{7, 1, 1000}, {0, 1}},
  };
  for (const auto& [shape, dims] : cases) check_all_ops(rand_t(shape, 4), dims, 1e-5, 1e-6);
}

TEST(CudaParityReduce, IntegerSumsAndExtremes) {
  MOH_REQUIRE_GPU();
  for (DType dt : {DType::Int32, DType::Int64}) {
    const Tensor x = test::rand_index({17, 1000, 3}, 1000000, 5).to(dt);
    for (const auto& dims : kDimSets) check_all_ops(x, dims, 0, 0);
    check_all_ops(x.permute({1, 2, 0}), gpu(x).permute({1, 2, 0}), {0, 2}, 0, 0);
  }
}

TEST(CudaParityReduce, Float64) {
  MOH_REQUIRE_GPU();
  const Tensor x = rand_t({9, 70, 33}, 6, DType::Float64);
  for (const auto& dims : kDimSets) check_all_ops(x, dims, 1e-12, 1e-12);
}

// GPU bf16/fp16 (float accumulation, one rounding on store) against the CPU float32 result of
// the same rounded inputs: rtol = two roundings of the type (2^-8 for bf16, 2^-11 for fp16, plus
// slack); atol covers sums near zero (float accumulation of up to 5000 terms below 1).
TEST(CudaParityReduce, HalfTypes) {
  MOH_REQUIRE_GPU();
  for (const auto& [dt, rtol] : {std::pair{DType::BFloat16, 1e-2}, std::pair{DType::Float16, 2e-3}}) {
    for (const Shape& shape : {Shape{5, 33, 7}, Shape{3, 5000, 2}}) {
      const Tensor xh = rand_t(shape, 7).to(dt), x32 = xh.to(DType::Float32);
      for (const auto& dims : kDimSets)
        for (bool keepdim : {false, true})
          for (const Named& op : kOps) {
            const Tensor got = cpu(op.fn(gpu(xh), dims, keepdim));
            EXPECT_EQ(got.dtype(), dt);
            test::expect_close(got.to(DType::Float32), op.fn(x32, dims, keepdim), rtol, 1e-3,
                               label(op.name, dims, keepdim, xh));
          }
      for (int64_t dim : {0, 1, -1})
        test::expect_equal(cpu(argmax(gpu(xh), dim)), argmax(x32, dim), "argmax of " + describe(xh));
    }
  }
}

Tensor with_nans() {
  // Row 0: NaN in the middle; row 1: ties of the maximum; row 2: NaN first and later; row 3: all -inf.
  const float nan = NAN, inf = INFINITY;
  return from_vector<float>({1, 5, nan, 7, 2,  //
                             3, 9, 1, 9, 9,    //
                             nan, 2, 8, nan, 1,  //
                             -inf, -inf, -inf, -inf, -inf},
                            {4, 5});
}

TEST(CudaParityReduce, NanAndTies) {
  MOH_REQUIRE_GPU();
  const Tensor x = with_nans();
  for (const auto& dims : std::vector<std::vector<int64_t>>{{}, {0}, {1}}) check_all_ops(x, dims, 0, 0);
  for (int64_t dim : {0, 1}) test::expect_equal(cpu(argmax(gpu(x), dim)), argmax(x, dim), "argmax with NaN");
  test::expect_equal(cpu(argmax(gpu(x), 1)), from_vector<int64_t>({2, 1, 0, 0}, {4}), "argmax values");
  // A long row (chunked, merged across threads): the first NaN and the first maximum still win.
  std::vector<float> v(5000, 0.5f);
  v[4000] = 3, v[700] = 3, v[4500] = NAN, v[2500] = NAN;
  const Tensor long_row = from_vector<float>(v, {1, 5000});
  test::expect_equal(cpu(argmax(gpu(long_row), 1)), from_vector<int64_t>({2500}, {1}), "argmax long row, NaN");
  v[2500] = v[4500] = 0;
  test::expect_equal(cpu(argmax(gpu(from_vector<float>(v, {1, 5000})), 1)), from_vector<int64_t>({700}, {1}),
                     "argmax long row, ties");
  test::expect_close(cpu(amax(gpu(long_row))), amax(long_row), 0, 0, "amax long row with NaN");
}

TEST(CudaParityReduce, Argmax) {
  MOH_REQUIRE_GPU();
  const Tensor x = rand_t({6, 33, 1000}, 8), xp = x.permute({2, 0, 1}), xpg = gpu(x).permute({2, 0, 1});
  for (int64_t dim : {0, 1, 2, -1, -2})
    for (bool keepdim : {false, true}) {
      test::expect_equal(cpu(argmax(gpu(x), dim, keepdim)), argmax(x, dim, keepdim), "argmax f32");
      test::expect_equal(cpu(argmax(xpg, dim, keepdim)), argmax(xp, dim, keepdim), "argmax permuted");
    }
  const Tensor xd = rand_t({3, 5000}, 9, DType::Float64);
  test::expect_equal(cpu(argmax(gpu(xd), 1)), argmax(xd, 1), "argmax f64 long rows");
  const Tensor xi = test::rand_index({40, 50}, 7, 10).to(DType::Int32);  // many ties
  test::expect_equal(cpu(argmax(gpu(xi), 0)), argmax(xi, 0), "argmax int32 ties");
  test::expect_equal(cpu(argmax(gpu(rand_t({}, 11)), 0)), argmax(rand_t({}, 11), 0), "argmax 0-d");
}

TEST(CudaParityReduce, VarianceAndSumToShape) {
  MOH_REQUIRE_GPU();
  const Tensor x = rand_t({12, 33, 5}, 12);
  for (const auto& dims : kDimSets)
    for (int64_t correction : {0, 1})
      test::expect_parity_f32(cpu(variance(gpu(x), dims, correction)), variance(x, dims, correction), "variance");
  for (const Shape& to : {Shape{33, 5}, Shape{1, 5}, Shape{12, 1, 1}, Shape{}})
    test::expect_parity_f32(cpu(sum_to_shape(gpu(x), to)), sum_to_shape(x, to), "sum_to_shape " + shape_str(to));
}

TEST(CudaParityReduce, EmptyAndZeroDim) {
  MOH_REQUIRE_GPU();
  const Tensor e = rand_t({0, 5}, 13);
  test::expect_equal(cpu(sum(gpu(e), {0})), sum(e, {0}), "sum over an empty dim");
  test::expect_close(cpu(mean(gpu(e), {0})), mean(e, {0}), 0, 0, "mean over an empty dim (NaN)");
  test::expect_equal(cpu(amax(gpu(e), {1})), amax(e, {1}), "amax with no outputs");
  test::expect_error([&] { amax(gpu(e), {0}); }, {"amax", "cannot reduce over zero elements"});
  const Tensor s = rand_t({}, 14);
  for (const Named& op : kOps) test::expect_parity_f32(cpu(op.fn(gpu(s), {}, false)), op.fn(s, {}, false), op.name);
}

TEST(CudaParityReduce, DtypeChecks) {
  MOH_REQUIRE_GPU();
  const Tensor xb = rand_t({4, 4}, 15).to(DType::BFloat16);
  test::expect_error([&] { sum(xb); }, {"sum", "float32, float64, int32 or int64"});  // CPU: no 16-bit math
  const Tensor xi = gpu(test::rand_index({4, 4}, 10, 1));
  test::expect_error([&] { mean(xi); }, {"mean", "float32, float64, bfloat16 or float16"});
}

TEST(CudaParityReduce, BitwiseReproducible) {
  MOH_REQUIRE_GPU();
  const Tensor x = gpu(rand_t({1 << 20}, 16));
  const Tensor rows = gpu(rand_t({100000, 7}, 17));
  test::expect_same_bytes(cpu(sum(x)), cpu(sum(x)), "full sum");
  test::expect_same_bytes(cpu(mean(rows, {0})), cpu(mean(rows, {0})), "column means");
}

}  // namespace
}  // namespace moh
