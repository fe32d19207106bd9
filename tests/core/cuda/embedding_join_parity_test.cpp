// CUDA vs CPU parity of embedding (forward copies rows exactly; the backward sums each row's
// gradients in ascending position order in double, as the CPU does, so float32/float64 results
// must be bitwise the CPU's and identical run to run), its range errors, and cat/stack/split/chunk
// over contiguous and transposed inputs of several dtypes.
#include <gtest/gtest.h>

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

TEST(CudaParityEmbedding, ForwardCopiesRows) {
  MOH_REQUIRE_GPU();
  const Tensor idx = rand_index({5, 9}, 13, 1);  // rows 13..16 unused, many repeats
  for (DType dt : {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16}) {
    const Tensor w = rand_t({17, 37}, 2, dt);
    const std::string what = str_cat("embedding ", dtype_name(dt));
    const Tensor want = embedding(w, idx);
    expect_equal(cpu(embedding(gpu(w), gpu(idx))), want, what);
    expect_equal(cpu(embedding(strided_like(gpu(w)), strided_like(gpu(idx)))), want, what + " strided");
  }
  expect_equal(cpu(embedding(gpu(rand_t({4, 3}, 3)), gpu(zeros({}, DType::Int64)))),
               embedding(rand_t({4, 3}, 3), zeros({}, DType::Int64)), "embedding 0-d index");
  EXPECT_EQ(embedding(gpu(rand_t({4, 3}, 3)), gpu(zeros({0, 2}, DType::Int64))).shape(), (Shape{0, 2, 3}));
}

TEST(CudaParityEmbedding, BackwardIsTheCpuBitwiseAndDeterministic) {
  MOH_REQUIRE_GPU();
  // 2000 positions over 7 hot rows of 50 (~285 adds per hot row; 43 rows get zeros), D = 33; the
  // strided run reads grad_out [2000, 33] with strides (1, 2000).
  const Tensor idx = rand_index({2000}, 7, 4);
  for (DType dt : {DType::Float32, DType::Float64}) {
    const Tensor g = rand_t({2000, 33}, 5, dt);
    const std::string what = str_cat("embedding_backward ", dtype_name(dt));
    const Tensor want = embedding_backward(g, idx, 50);
    const Tensor got = cpu(embedding_backward(gpu(g), gpu(idx), 50));
    test::expect_same_bytes(got, want, what);
    test::expect_same_bytes(cpu(embedding_backward(gpu(g), gpu(idx), 50)), got, what + " rerun");
    test::expect_same_bytes(cpu(embedding_backward(strided_like(gpu(g)), gpu(idx), 50)), want, what + " strided");
    const Tensor idx2 = idx.reshape({40, 50}), g2 = g.reshape({40, 50, 33});  // 2-D indices
    test::expect_same_bytes(cpu(embedding_backward(gpu(g2), strided_like(gpu(idx2)), 50)),
                            embedding_backward(g2, strided_like(idx2), 50), what + " 2-d strided indices");
  }
  // Many more rows than positions, and rows with a single hit (index groups with empty starts).
  const Tensor sparse_idx = rand_index({300}, 5000, 6), g = rand_t({300, 8}, 7);
  test::expect_same_bytes(cpu(embedding_backward(gpu(g), gpu(sparse_idx), 5000)),
                          embedding_backward(g, sparse_idx, 5000), "embedding_backward sparse");
  // No positions: all zeros.
  const Tensor none = zeros({0}, DType::Int64), g0 = zeros({0, 4});
  expect_equal(cpu(embedding_backward(gpu(g0), gpu(none), 3)), zeros({3, 4}), "embedding_backward empty");
}

TEST(CudaParityEmbedding, BackwardHalfWithinOneRounding) {
  MOH_REQUIRE_GPU();
  // 16-bit gradients are summed in float and rounded once: 2^-8 (bfloat16) / 2^-11 (float16)
  // relative, plus float32 summation error (~300 adds of values <= 1) in the absolute floor.
  const Tensor idx = rand_index({600}, 4, 8);
  for (auto [dt, rtol] : {std::pair{DType::BFloat16, 8e-3}, std::pair{DType::Float16, 1e-3}}) {
    const Tensor g = rand_t({600, 24}, 9, dt);
    const Tensor want = embedding_backward(cpu(g).to(DType::Float32), idx, 6);
    const Tensor got = embedding_backward(gpu(g), gpu(idx), 6);
    EXPECT_EQ(got.dtype(), dt);
    expect_close(cpu(got).to(DType::Float32), want, rtol, 1e-4, str_cat("embedding_backward ", dtype_name(dt)));
  }
}

TEST(CudaParityEmbedding, OutOfRangeIndicesRaiseTheCpuError) {
  MOH_REQUIRE_GPU();
  const Tensor w = rand_t({6, 3}, 10);
  const Tensor idx = from_vector<int64_t>({1, 5, 0, 6, 2, -3}, {2, 3});  // first bad: [1, 0] = 6
  for (Device d : {Device::cpu(), Device::cuda(0)}) {
    test::expect_error([&] { embedding(w.to(d), idx.to(d)); },
                       {"embedding: indices[1, 0] = 6 is out of range [0, 6) for the 6 rows of weight"});
    test::expect_error([&] { embedding_backward(rand_t({2, 3, 4}, 11).to(d), idx.to(d), 4); },
                       {"embedding_backward: indices[0, 1] = 5 is out of range [0, 4) for 4 rows"});
  }
}

// ------------------------------------------------------------------------------------- join

TEST(CudaParityJoin, CatOfContiguousAndTransposedInputs) {
  MOH_REQUIRE_GPU();
  for (DType dt : {DType::Float32, DType::Int64, DType::Bool, DType::BFloat16}) {
    auto make = [&](const Shape& s, uint32_t seed) {
      return dt == DType::Float32 || dt == DType::BFloat16 ? rand_t(s, seed, dt) : rand_index(s, 2, seed).to(dt);
    };
    const Tensor a = make({6, 5}, 12), b = make({6, 5}, 13), c = make({3, 5}, 14), e = make({6, 2}, 15);
    const std::string what = str_cat("cat ", dtype_name(dt));
    // dim 0: a, transposed-layout b, c (fewer rows); dim 1 and -1: a, transposed-layout b, e (fewer cols).
    expect_equal(cpu(cat({gpu(a), strided_like(gpu(b)), gpu(c)}, 0)), cat({a, b, c}, 0), what + " dim 0");
    for (int64_t dim : {1, -1})
      expect_equal(cpu(cat({gpu(a), strided_like(gpu(b)), gpu(e)}, dim)), cat({a, b, e}, dim),
                   str_cat(what, " dim ", dim));
    // A column slice (strided rows) and an empty part.
    const Tensor wide = make({6, 9}, 16);
    expect_equal(cpu(cat({gpu(wide).narrow(1, 2, 4), gpu(make({6, 0}, 17)), gpu(a)}, 1)),
                 cat({wide.narrow(1, 2, 4), make({6, 0}, 17), a}, 1), what + " slice");
    const Tensor a3 = make({2, 3, 4}, 18), b3 = make({2, 3, 4}, 19);
    expect_equal(cpu(cat({gpu(a3), strided_like(gpu(b3))}, -1)), cat({a3, b3}, -1), what + " 3-d");
  }
  const Tensor x = rand_t({4, 3}, 20);
  expect_equal(cpu(cat({gpu(zeros({0})), gpu(x), gpu(zeros({0}))}, 1)), x, "cat skips legacy [0] tensors");
}

TEST(CudaParityJoin, StackSplitChunkMatchCpu) {
  MOH_REQUIRE_GPU();
  const Tensor a = rand_t({4, 7}, 21), b = rand_t({4, 7}, 22), c = rand_index({4, 7}, 9, 23);
  for (int64_t dim : {0, 1, 2, -1}) {
    expect_equal(cpu(stack({gpu(a), strided_like(gpu(b))}, dim)), stack({a, b}, dim), str_cat("stack dim ", dim));
  }
  expect_equal(cpu(stack({gpu(c), gpu(c)}, 1)), stack({c, c}, 1), "stack int64");
  const Tensor x = rand_t({5, 11}, 24);
  const std::vector<Tensor> want = split(x, 4, 1), got = split(gpu(x), 4, 1);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_equal(cpu(got[i]), want[i], str_cat("split part ", i));
  const std::vector<Tensor> want_s = split(x, {2, 0, 3}, 0), got_s = split(gpu(x), {2, 0, 3}, 0);
  ASSERT_EQ(got_s.size(), want_s.size());
  for (size_t i = 0; i < got_s.size(); ++i) expect_equal(cpu(got_s[i]), want_s[i], str_cat("split sizes part ", i));
  const std::vector<Tensor> want_c = chunk(x, 3, -1), got_c = chunk(gpu(x), 3, -1);
  ASSERT_EQ(got_c.size(), want_c.size());
  for (size_t i = 0; i < got_c.size(); ++i) expect_equal(cpu(got_c[i]), want_c[i], str_cat("chunk part ", i));
  // Splitting and re-joining on the GPU gives x back.
  expect_equal(cpu(cat(got_c, 1)), x, "cat(chunk(x))");
}

}  // namespace
}  // namespace moh
