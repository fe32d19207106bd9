// CUDA vs CPU parity of the indexing ops: gather/scatter/scatter_add and index_select/index_add
// with duplicate indices, negative dims and non-contiguous operands (both scatter paths: per-line
// walks and index groups for long shared indices), topk (k up to the row length, largest and
// smallest, ties, NaN, odd row lengths), one_hot, pack_head_rows (random selections, every head shared, no
// tokens, its selection errors), and the out-of-range index errors.
// Copies and index results must be exact; scatter_add/index_add perform the CPU's additions in the
// CPU's order, so float32 and float64 results must be bitwise the CPU's (and identical run to run).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "core/factory.h"
#include "core/ops.h"
#include "tests/core/cuda/parity.h"

namespace moh {
namespace {

using test::cpu;
using test::expect_close;
using test::expect_equal;
using test::gpu;
using test::rand_index;
using test::rand_t;
using test::strided_like;

// Random values of dtype (bool and int64 from small integers, so duplicates abound).
Tensor values_of(const Shape& shape, DType dtype, uint32_t seed) {
  if (dtype == DType::Bool) return rand_index(shape, 2, seed).to(DType::Bool);
  if (dtype == DType::Int64 || dtype == DType::Int32) return rand_index(shape, 100, seed).to(dtype);
  return rand_t(shape, seed, dtype);
}

// Rows drawn from a few values, so ties are common, with NaN sprinkled in for float dtypes.
Tensor tied_values(const Shape& shape, DType dtype, uint32_t seed, bool with_nan) {
  std::mt19937 rng(seed);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (double& e : v) e = with_nan && rng() % 9 == 0 ? std::nan("") : double(int(rng() % 5) - 2);
  return from_vector<double>(v, shape).to(dtype);
}

TEST(CudaParityIndexing, GatherMatchesCpu) {
  MOH_REQUIRE_GPU();
  const Shape xs{6, 9, 5};
  for (DType dt : {DType::Float32, DType::Float64, DType::BFloat16, DType::Int64, DType::Bool}) {
    const Tensor x = values_of(xs, dt, 1);
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      const int64_t d = dim < 0 ? dim + 3 : dim;
      const Shape is{4, d == 1 ? 13 : 7, 3};  // smaller than x off dim; longer than x along dim 1
      const Tensor idx = rand_index(is, xs[size_t(d)], 2 + uint32_t(d));
      const std::string what = str_cat("gather ", dtype_name(dt), " dim ", dim);
      const Tensor want = gather(x, dim, idx);
      expect_equal(cpu(gather(gpu(x), dim, gpu(idx))), want, what);
      expect_equal(cpu(gather(strided_like(gpu(x)), dim, strided_like(gpu(idx)))), want, what + " strided");
    }
  }
  const Tensor x0 = scalar_tensor(2.5), i0 = zeros({}, DType::Int64);  // 0-d operands
  expect_equal(cpu(gather(gpu(x0), 0, gpu(i0))), gather(x0, 0, i0), "gather 0-d");
  const Tensor empty_idx = zeros({0, 3}, DType::Int64);
  EXPECT_EQ(gather(gpu(rand_t({4, 3}, 3)), 0, gpu(empty_idx)).shape(), (Shape{0, 3}));
}

TEST(CudaParityIndexing, ScatterDuplicatesLastWriteWins) {
  MOH_REQUIRE_GPU();
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64, DType::Bool, DType::Float16}) {
    const Tensor x = values_of({5, 8}, dt, 4), src = values_of({6, 9}, dt, 5);
    for (int64_t dim : {0, 1, -1}) {
      const int64_t d = dim < 0 ? dim + 2 : dim;
      const Tensor idx = rand_index({5, 7}, d == 0 ? 5 : 8, 6 + uint32_t(d));  // many duplicates per line
      const std::string what = str_cat("scatter ", dtype_name(dt), " dim ", dim);
      const Tensor want = scatter(x, dim, idx, src);
      expect_equal(cpu(scatter(gpu(x), dim, gpu(idx), gpu(src))), want, what);
      expect_equal(cpu(scatter(strided_like(gpu(x)), dim, gpu(idx), strided_like(gpu(src)))), want, what + " strided");
    }
  }
}

TEST(CudaParityIndexing, ScatterAddIsTheCpuBitwise) {
  MOH_REQUIRE_GPU();
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64, DType::Int32}) {
    const Tensor x = values_of({7, 33}, dt, 7), src = values_of({9, 40}, dt, 8);
    for (int64_t dim : {0, 1, -2}) {
      const int64_t d = dim < 0 ? dim + 2 : dim;
      const Tensor idx = rand_index({7, 33}, d == 0 ? 3 : 4, 9 + uint32_t(d));  // up to 33 adds per element
      const std::string what = str_cat("scatter_add ", dtype_name(dt), " dim ", dim);
      const Tensor want = scatter_add(x, dim, idx, src);
      const Tensor got = cpu(scatter_add(gpu(x), dim, gpu(idx), gpu(src)));
      test::expect_same_bytes(got, want, what);
      test::expect_same_bytes(cpu(scatter_add(strided_like(gpu(x)), dim, strided_like(gpu(idx)), gpu(src))), want,
                              what + " strided");
      test::expect_same_bytes(cpu(scatter_add(gpu(x), dim, gpu(idx), gpu(src))), got, what + " rerun");
    }
  }
}

TEST(CudaParityIndexing, ScatterAddHalfWithinRounding) {
  MOH_REQUIRE_GPU();
  // Each of the <= 4 adds per element rounds once to bfloat16 (2^-9 relative to partial sums of
  // magnitude <= 5), so 4 * 5 * 2^-9 ~ 0.04 bounds the gap to the float32 sum of the same inputs.
  const Tensor x = rand_t({6, 20}, 10, DType::BFloat16), src = rand_t({6, 20}, 11, DType::BFloat16);
  const Tensor idx = rand_index({6, 20}, 5, 12);
  const Tensor want = scatter_add(cpu(x).to(DType::Float32), 1, idx, cpu(src).to(DType::Float32));
  const Tensor got = scatter_add(gpu(x), 1, gpu(idx), gpu(src));
  EXPECT_EQ(got.dtype(), DType::BFloat16);
  expect_close(cpu(got).to(DType::Float32), want, 0.0, 0.04, "scatter_add bfloat16");
}

TEST(CudaParityIndexing, IndexSelectMatchesCpu) {
  MOH_REQUIRE_GPU();
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::Int64, DType::Bool}) {
    const Tensor x = values_of({11, 6, 37}, dt, 13);
    for (int64_t dim : {0, 1, 2, -1}) {
      const int64_t d = dim < 0 ? dim + 3 : dim;
      const Tensor idx = rand_index({19}, x.size(d), 14 + uint32_t(d));
      const std::string what = str_cat("index_select ", dtype_name(dt), " dim ", dim);
      const Tensor want = index_select(x, dim, idx);
      expect_equal(cpu(index_select(gpu(x), dim, gpu(idx))), want, what);
      expect_equal(cpu(index_select(strided_like(gpu(x)), dim, gpu(idx))), want, what + " strided");
    }
  }
}

TEST(CudaParityIndexing, IndexAddIsTheCpuBitwise) {
  MOH_REQUIRE_GPU();
  // Index lengths on both sides of the 16-position switch from per-line walks to index groups, an
  // index longer than the dim (duplicates guaranteed), and a 1-D x (a single line).
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64}) {
    for (int64_t n : {1, 5, 16, 17, 300}) {
      for (int64_t dim : {0, 1, -1}) {
        const Shape xs{9, 70};
        const int64_t d = dim < 0 ? dim + 2 : dim;
        Shape ss = xs;
        ss[size_t(d)] = n;
        const Tensor x = values_of(xs, dt, 15), src = values_of(ss, dt, 16 + uint32_t(n));
        const Tensor idx = rand_index({n}, xs[size_t(d)], 17 + uint32_t(n));
        const std::string what = str_cat("index_add ", dtype_name(dt), " n ", n, " dim ", dim);
        const Tensor want = index_add(x, dim, idx, src);
        const Tensor got = cpu(index_add(gpu(x), dim, gpu(idx), gpu(src)));
        test::expect_same_bytes(got, want, what);
        test::expect_same_bytes(cpu(index_add(strided_like(gpu(x)), dim, gpu(idx), strided_like(gpu(src)))), want,
                                what + " strided");
        test::expect_same_bytes(cpu(index_add(gpu(x), dim, gpu(idx), gpu(src))), got, what + " rerun");
      }
    }
    const Tensor x1 = values_of({5}, dt, 18), s1 = values_of({200}, dt, 19), i1 = rand_index({200}, 5, 20);
    test::expect_same_bytes(cpu(index_add(gpu(x1), 0, gpu(i1), gpu(s1))), index_add(x1, 0, i1, s1),
                            str_cat("index_add 1-D ", dtype_name(dt)));
  }
}

void expect_topk_parity(const Tensor& x, int64_t k, bool largest, const std::string& what) {
  const TopK want = topk(x, k, largest);
  for (const Tensor& in : {gpu(x), strided_like(gpu(x))}) {
    const TopK got = topk(in, k, largest);
    expect_equal(cpu(got.values), want.values, what + " values");
    expect_equal(cpu(got.indices), want.indices, what + " indices");
  }
}

TEST(CudaParityIndexing, TopkMatchesCpu) {
  MOH_REQUIRE_GPU();
  for (int64_t len : {1, 3, 8, 33, 257}) {
    for (int64_t k : std::initializer_list<int64_t>{1, 2, 4, 8, 17, len}) {
      if (k > len) continue;
      for (bool largest : {true, false}) {
        const std::string what = "topk len " + std::to_string(len) + " k " + std::to_string(k) +
                                 (largest ? " largest" : " smallest");
        expect_topk_parity(rand_t({7, len}, 21 + uint64_t(len)), k, largest, what + " float32");
        expect_topk_parity(tied_values({3, 5, len}, DType::Float64, 22, true), k, largest, what + " ties+NaN");
        expect_topk_parity(tied_values({6, len}, DType::Float32, 23, true), k, largest, what + " float32 ties+NaN");
        expect_topk_parity(tied_values({6, len}, DType::Int64, 24, false), k, largest, what + " int64 ties");
      }
    }
  }
  // Many rows (hundreds of blocks of 8 row warps) and k = 0.
  expect_topk_parity(rand_t({3000, 40}, 25), 5, true, "topk 3000 rows");
  EXPECT_EQ(topk(gpu(rand_t({4, 6}, 26)), 0).values.shape(), (Shape{4, 0}));
}

TEST(CudaParityIndexing, TopkHalfRanksAsFloat) {
  MOH_REQUIRE_GPU();
  // 16-bit values are exact in float32, so values and indices must equal the CPU's on the widened input.
  for (DType dt : {DType::BFloat16, DType::Float16}) {
    const Tensor x = tied_values({9, 45}, dt, 27, true);
    const Tensor xf = cpu(x).to(DType::Float32);
    for (bool largest : {true, false}) {
      const TopK want = topk(xf, 6, largest), got = topk(gpu(x), 6, largest);
      EXPECT_EQ(got.values.dtype(), dt);
      expect_equal(cpu(got.values).to(DType::Float32), want.values, str_cat("topk values ", dtype_name(dt)));
      expect_equal(cpu(got.indices), want.indices, str_cat("topk indices ", dtype_name(dt)));
    }
  }
}

TEST(CudaParityIndexing, OneHotMatchesCpu) {
  MOH_REQUIRE_GPU();
  const Tensor idx = rand_index({13, 4}, 7, 28);
  for (DType dt : {DType::Int64, DType::Float32, DType::Bool, DType::BFloat16, DType::UInt8}) {
    const std::string what = str_cat("one_hot ", dtype_name(dt));
    const Tensor want = one_hot(idx, 7, dt);
    expect_equal(cpu(one_hot(gpu(idx), 7, dt)), want, what);
    expect_equal(cpu(one_hot(gpu(idx).t(), 7, dt)), one_hot(idx.t(), 7, dt), what + " transposed indices");
  }
  expect_equal(cpu(one_hot(gpu(zeros({}, DType::Int64)), 3)), one_hot(zeros({}, DType::Int64), 3), "one_hot 0-d");
}

// The GPU raises the CPU's error (device names aside, the message through `expected` is equal).
void expect_same_error(const std::function<void(Device)>& run, const std::string& expected) {
  for (Device dev : {Device::cpu(), Device::cuda(0)}) test::expect_error([&] { run(dev); }, {expected});
}

TEST(CudaParityIndexing, OutOfRangeIndicesRaiseTheCpuError) {
  MOH_REQUIRE_GPU();
  const Tensor x = rand_t({3, 4}, 29);
  // The first bad position in row-major order is named, not the first one a thread finds.
  Tensor idx = zeros({40, 4}, DType::Int64);
  idx = scatter(idx, 0, from_vector<int64_t>({33, 17, 39, 25}, {1, 4}), from_vector<int64_t>({9, -1, 3, 7}, {1, 4}));
  expect_same_error([&](Device d) { gather(x.to(d), 0, idx.to(d)); },
                    "gather: index[17, 1] = -1 is out of range [0, 3) for dim 0 of x");
  expect_same_error([&](Device d) { gather(x.to(d), 0, strided_like(idx.to(d))); }, "index[17, 1] = -1");
  // A non-contiguous index names the logical position: in bad.t() (shape [3, 2]) 5 sits at [2, 1].
  const Tensor bad = from_vector<int64_t>({0, 1, 2, 0, 1, 5}, {2, 3});
  expect_same_error([&](Device d) { one_hot(bad.to(d).t(), 4); }, "one_hot: indices[2, 1] = 5 is out of range [0, 4)");
  expect_same_error([&](Device d) { index_select(x.to(d), 1, from_vector<int64_t>({0, 4}, {2}).to(d)); },
                    "index_select: index[1] = 4 is out of range [0, 4) for dim 1 of x");
  expect_same_error([&](Device d) { scatter_add(x.to(d), 1, full({3, 4}, 4, DType::Int64, d), x.to(d)); },
                    "scatter_add: index[0, 0] = 4 is out of range [0, 4)");
  expect_same_error([&](Device d) { gather(scalar_tensor(1.0, DType::Float32, d), 0, full({}, 1, DType::Int64, d)); },
                    "gather: index = 1 is out of range [0, 1)");
}

// gate_rows names a repeated pair on either device (its values must be distinct), and a pair out of range.
TEST(CudaParityIndexing, GateRowsRejectsARepeatedOrOutOfRangePair) {
  MOH_REQUIRE_GPU();
  const Tensor rows = rand_t({4, 3}, 30), gates = rand_t({6}, 31);
  auto index = [](std::vector<int64_t> v, Device d) { return from_vector(v, {int64_t(v.size())}).to(d); };
  expect_same_error([&](Device d) { gate_rows(rows.to(d), gates.to(d), index({5, 0, 3, 0}, d), true); },
                    "gate_rows: index holds 0 more than once");
  expect_same_error([&](Device d) { gate_rows(rows.to(d), gates.to(d), index({5, 0, 6, 1}, d), false); },
                    "gate_rows: index[2] = 6 is out of range [0, 6)");
}

TEST(CudaParityIndexing, PackHeadRowsMatchesTheCpu) {
  MOH_REQUIRE_GPU();
  struct Case {
    int64_t batch, tokens, heads, shared, k;
  };
  Generator gen(40);
  for (const Case c : {Case{1, 9, 4, 0, 1}, Case{3, 50, 8, 2, 3}, Case{2, 333, 32, 4, 21}, Case{4, 0, 3, 1, 1},
                       Case{2, 7, 5, 5, 0}}) {
    const int64_t n = c.batch * c.tokens, e = c.heads - c.shared;
    const Tensor sel = c.k == 0 ? Tensor::empty({n, 0}, DType::Int64) : topk(uniform({n, e}, 0, 1, gen), c.k).indices;
    const HeadRows want = pack_head_rows(sel, c.batch, c.heads, c.shared, 11);
    const HeadRows got = pack_head_rows(gpu(sel), c.batch, c.heads, c.shared, 11);
    const std::string what = str_cat("batch ", c.batch, " tokens ", c.tokens, " heads ", c.heads, " k ", c.k);
    expect_equal(cpu(got.token_index), want.token_index, what + " token_index");
    expect_equal(cpu(got.q_pos), want.q_pos, what + " q_pos");
    expect_equal(cpu(got.pair_index), want.pair_index, what + " pair_index");
    expect_equal(cpu(got.row_offsets), want.row_offsets, what + " row_offsets");
    expect_equal(cpu(got.head_offsets), want.head_offsets, what + " head_offsets");
  }
  auto sel = [](std::vector<int64_t> v, Device d) { return from_vector(v, {3, 2}).to(d); };
  expect_same_error([&](Device d) { pack_head_rows(sel({0, 2, 1, 3, 0, 1}, d), 1, 4, 1); },
                    "pack_head_rows: topk[1, 1] = 3 is out of range [0, 3)");
  expect_same_error([&](Device d) { pack_head_rows(sel({0, 2, 1, 0, 2, 2}, d), 1, 4, 1); },
                    "pack_head_rows: token 2 selects routed head 2 twice");
}

}  // namespace
}  // namespace moh
