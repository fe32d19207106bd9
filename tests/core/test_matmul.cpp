// matmul/bmm/addmm against a naive double triple loop: contiguous, transposed, padded (sliced) and
// strided operands, broadcast and folded batches, small (serial) and large (row bands on the thread team)
// products on 1 and 2 threads,
// broadcast biases, float64, empty and K = 0 edges, and every error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using test::rand_t;
// Naive [..., M, K] @ [..., K, N] in double with NumPy batch broadcasting.
std::vector<double> reference(const Tensor& a, const Tensor& b, Shape& out_shape) {
  Shape ab(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(ab, bb, "reference");
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  Shape as = batch, bs = batch;
  as.insert(as.end(), {m, k});
  bs.insert(bs.end(), {k, n});
  out_shape = batch;
  out_shape.insert(out_shape.end(), {m, n});
  auto va = a.expand(as).to_vector<double>(), vb = b.expand(bs).to_vector<double>();
  const int64_t nbatch = shape_numel(batch);
  std::vector<double> out(size_t(nbatch * m * n), 0.0);
  for (int64_t p = 0; p < nbatch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q)
          s += va[size_t(p * m * k + i * k + q)] * vb[size_t(p * k * n + q * n + j)];
        out[size_t(p * m * n + i * n + j)] = s;
      }
  return out;
}

void expect_matmul(const Tensor& a, const Tensor& b, double tol = 1e-5) {
  Shape shape;
  auto want = reference(a, b, shape);
  Tensor got = matmul(a, b);
  ASSERT_EQ(got.shape(), shape) << describe(a) << " @ " << describe(b);
  EXPECT_EQ(got.dtype(), a.dtype());
  EXPECT_TRUE(got.is_contiguous());
  auto v = got.to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i)
    ASSERT_NEAR(v[i], want[i], tol * (1.0 + std::abs(want[i])))
        << "element " << i << " of " << describe(a) << " @ " << describe(b);
}

TEST(Matmul, ContiguousShapes) {
  expect_matmul(rand_t({7, 13}, 1), rand_t({13, 5}, 2));
  expect_matmul(rand_t({1, 9}, 3), rand_t({9, 4}, 4));  // M = 1
  expect_matmul(rand_t({6, 9}, 5), rand_t({9, 1}, 6));  // N = 1
  expect_matmul(rand_t({6, 1}, 7), rand_t({1, 8}, 8));  // K = 1 (outer product)
  expect_matmul(rand_t({65, 130}, 9), rand_t({130, 33}, 10));
}

TEST(Matmul, SmallProductsRunSeriallyAndRestoreTheThreadCount) {
  const int threads = num_threads();
  expect_matmul(rand_t({40, 30}, 110), rand_t({30, 20}, 111));                 // below the band limit
  EXPECT_EQ(num_threads(), threads);
  expect_matmul(rand_t({300, 200}, 112), rand_t({50, 200}, 113).t(), 1e-4);   // above: row bands
  expect_matmul(rand_t({2, 150, 100}, 114), rand_t({2, 100, 160}, 115), 1e-4);  // batched, each above
  EXPECT_EQ(num_threads(), threads);
}

// Row bands split C between the threads: every row right on 1, 2 and 3 threads, for a band edge off the
// 16-row grain, a transposed A (a weight gradient), a batch of 3 over 2 threads (each matrix cut into
// bands), a batch of one-row products (gemv), a folded batch, and products too short for row bands whose
// columns are cut instead (a narrow layer's weight gradient; B plain and transposed; a band edge off the
// 16-column grain). (Not bitwise: OpenBLAS may round a row differently with the size of the call that
// holds it.)
TEST(Matmul, RowBandsCoverEveryRowOnOneAndTwoThreads) {
  const int threads = num_threads();
  const std::vector<std::pair<Tensor, Tensor>> cases{
      {rand_t({301, 200}, 120), rand_t({50, 200}, 121).t()},
      {rand_t({700, 37}, 122).t(), rand_t({700, 90}, 123)},
      {rand_t({3, 150, 100}, 124), rand_t({3, 100, 160}, 125)},
      {rand_t({64, 1, 300}, 126), rand_t({64, 300, 80}, 127)},
      {rand_t({2, 2, 9, 130}, 128), rand_t({130, 500}, 129)},
      {rand_t({900, 10}, 130).t(), rand_t({900, 130}, 131)},
      {rand_t({10, 300}, 132), rand_t({140, 300}, 133).t()}};
  for (int t : {1, 2, 3}) {
    set_num_threads(t);
    for (const auto& [a, b] : cases) expect_matmul(a, b, 1e-4);
  }
  set_num_threads(threads);
}

// OpenBLAS is linked statically with the kernel tables of pre-AVX2 CPUs aliased to its SSE3 fallback
// (cmake/openblas_static.cmake): a CPU with AVX2 must still get one of the kept AVX2/AVX-512 tables.
TEST(Matmul, BlasPicksAnAvx2KernelSetOnAvx2Cpus) {
  const std::string core = blas_core_name();
  ASSERT_FALSE(core.empty());
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "this CPU has no AVX2/FMA; OpenBLAS picked " << core;
  const std::vector<std::string> kept = {"Haswell", "Zen", "SkylakeX", "Cooperlake"};
  EXPECT_NE(std::find(kept.begin(), kept.end(), core), kept.end()) << "OpenBLAS picked " << core;
}

TEST(Matmul, TransposedViewsNeedNoCopy) {
  Tensor at = rand_t({11, 6}, 11), bt = rand_t({4, 11}, 12);
  expect_matmul(at.t(), bt.t());  // both column-major
  expect_matmul(at.t(), rand_t({11, 4}, 13));
  expect_matmul(rand_t({4, 11}, 14), at);
}

TEST(Matmul, PaddedLeadingDims) {
  Tensor big_a = rand_t({7, 20}, 15), big_b = rand_t({30, 9}, 16);
  expect_matmul(big_a.narrow(1, 3, 12), big_b.narrow(0, 5, 12).narrow(1, 1, 6));  // row-major, lda 20, ldb 9
  // Column-major with padding: [M, K] view with strides (1, 23).
  Tensor col = rand_t({12, 23}, 17).narrow(1, 2, 7).t();
  EXPECT_EQ(col.strides(), (std::vector<int64_t>{1, 23}));
  expect_matmul(col, rand_t({12, 3}, 18));
  expect_matmul(rand_t({2, 7}, 19), col);
}

TEST(Matmul, NonBlasLayoutsAreCopied) {
  Tensor every_other = rand_t({5, 16}, 20).slice(1, 0, 16, 2);  // column stride 2
  expect_matmul(every_other, rand_t({8, 3}, 21));
  expect_matmul(rand_t({3, 5}, 22), every_other);
  Tensor row = rand_t({1, 6}, 23).expand({4, 6});  // row stride 0
  expect_matmul(row, rand_t({6, 5}, 24));
  // A strided matrix inside a broadcast batch: copied once, still broadcast.
  Tensor strided_batch = rand_t({1, 4, 12}, 25).slice(2, 0, 12, 3);
  expect_matmul(strided_batch, rand_t({3, 4, 2}, 26));
}

TEST(Matmul, BroadcastBatches) {
  expect_matmul(rand_t({2, 1, 4, 5}, 27), rand_t({3, 5, 6}, 28));
  expect_matmul(rand_t({4, 5}, 29), rand_t({3, 5, 2}, 30));  // shared a
  expect_matmul(rand_t({2, 3, 4, 5}, 31), rand_t({5, 6}, 32).expand({3, 5, 6}));
  // x [B, T, K] @ W^T: folds into one GEMM; also with a padded x.
  Tensor w = rand_t({6, 5}, 33);
  expect_matmul(rand_t({3, 4, 5}, 34), w.t());
  expect_matmul(rand_t({3, 4, 8}, 35).narrow(2, 1, 5), w.t());
  expect_matmul(rand_t({3, 4, 5}, 36).transpose(0, 1), w.t());  // batch not evenly spaced
  expect_matmul(rand_t({3, 5, 4}, 37).transpose(1, 2), w.t());  // transposed batch matrices
}

TEST(Matmul, ManySmallBatchesAndBmm) {
  expect_matmul(rand_t({64, 4, 7}, 38), rand_t({64, 7, 3}, 39));
  Tensor a = rand_t({5, 3, 8}, 40), b = rand_t({5, 6, 8}, 41).transpose(1, 2);
  Tensor got = bmm(a, b);
  Shape shape;
  auto want = reference(a, b, shape);
  EXPECT_EQ(got.shape(), (Shape{5, 3, 6}));
  auto v = got.to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], want[i], 1e-5);
}

TEST(Matmul, Float64) {
  expect_matmul(rand_t({9, 17}, 42, DType::Float64), rand_t({17, 5}, 43, DType::Float64), 1e-13);
  expect_matmul(rand_t({2, 17, 9}, 44, DType::Float64).transpose(1, 2), rand_t({17, 5}, 45, DType::Float64),
                1e-13);
}

TEST(Matmul, EmptyAndZeroInnerDim) {
  Tensor z = matmul(zeros({3, 0}), zeros({0, 4}));
  EXPECT_EQ(z.shape(), (Shape{3, 4}));
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(12, 0.0f));
  EXPECT_EQ(matmul(zeros({0, 5}), rand_t({5, 4}, 49)).shape(), (Shape{0, 4}));
  EXPECT_EQ(matmul(zeros({2, 0, 3, 5}), rand_t({5, 4}, 51)).shape(), (Shape{2, 0, 3, 4}));
  EXPECT_EQ(matmul(rand_t({3, 5}, 50), zeros({5, 0})).shape(), (Shape{3, 0}));
}

TEST(Matmul, Errors) {
  Tensor a = rand_t({3, 4}, 52);
  EXPECT_THROW(matmul(a, rand_t({5, 2}, 53)), Error);                // inner dims
  EXPECT_THROW(matmul(rand_t({4}, 54), rand_t({4, 2}, 55)), Error);  // 1-D
  EXPECT_THROW(matmul(a, rand_t({4}, 56)), Error);
  EXPECT_THROW(matmul(a, rand_t({4, 2}, 57, DType::Float64)), Error);  // dtype mismatch
  EXPECT_THROW(matmul(a.to(DType::Int64), rand_t({4, 2}, 58).to(DType::Int64)), Error);
  EXPECT_THROW(matmul(rand_t({2, 3, 4}, 59), rand_t({3, 4, 2}, 60)), Error);  // batch 2 vs 3
  EXPECT_THROW(matmul(Tensor(), a), Error);
  EXPECT_THROW(bmm(a, rand_t({4, 2}, 61)), Error);                         // not 3-D
  EXPECT_THROW(bmm(rand_t({2, 3, 4}, 62), rand_t({1, 4, 2}, 63)), Error);  // bmm does not broadcast
  try {
    matmul(a, rand_t({5, 2}, 64));
    FAIL();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[3, 4]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[5, 2]"), std::string::npos) << msg;
  }
}

// addmm = the naive product plus the bias broadcast to the result, in double.
void expect_addmm(const Tensor& bias, const Tensor& a, const Tensor& b, double tol = 1e-5) {
  Shape shape;
  auto want = reference(a, b, shape);
  auto vb = bias.expand(shape).to_vector<double>();
  Tensor got = addmm(bias, a, b);
  ASSERT_EQ(got.shape(), shape) << describe(bias) << " + " << describe(a) << " @ " << describe(b);
  EXPECT_EQ(got.dtype(), a.dtype());
  EXPECT_TRUE(got.is_contiguous());
  auto v = got.to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i)
    ASSERT_NEAR(v[i], want[i] + vb[i], tol * (1.0 + std::abs(want[i] + vb[i])))
        << "element " << i << " of " << describe(bias) << " + " << describe(a) << " @ " << describe(b);
}

TEST(Matmul, AddmmAddsTheBroadcastBias) {
  Tensor w = rand_t({6, 5}, 70);
  expect_addmm(rand_t({6}, 71), rand_t({3, 4, 5}, 72), w.t());                   // Linear: x @ W^T + b
  expect_addmm(rand_t({12}, 73).slice(0, 0, 12, 2), rand_t({4, 5}, 74), w.t());  // strided bias
  expect_addmm(rand_t({4, 6}, 75), rand_t({2, 4, 5}, 76), rand_t({5, 6}, 77));   // [M, N] bias
  expect_addmm(rand_t({2, 1, 6}, 78), rand_t({2, 5, 3}, 79).transpose(1, 2), w.t());  // per-batch bias
  expect_addmm(rand_t({3}, 80), rand_t({64, 4, 7}, 81), rand_t({64, 7, 3}, 82));  // many small batches
  expect_addmm(rand_t({1}, 83), rand_t({5, 16}, 84).slice(1, 0, 16, 2), rand_t({8, 3}, 85));  // copied a
  const DType f64 = DType::Float64;
  expect_addmm(rand_t({6}, 86, f64), rand_t({9, 5}, 87, f64), w.t().to(f64), 1e-13);
  // K = 0: the bias alone; empty result.
  Tensor bias = rand_t({4}, 88);
  EXPECT_EQ(addmm(bias, zeros({3, 0}), zeros({0, 4})).to_vector<float>(),
            bias.expand({3, 4}).contiguous().to_vector<float>());
  EXPECT_EQ(addmm(bias, zeros({0, 5}), rand_t({5, 4}, 89)).shape(), (Shape{0, 4}));
}

TEST(Matmul, AddmmErrors) {
  Tensor a = rand_t({3, 4}, 90), b = rand_t({4, 6}, 91);
  EXPECT_THROW(addmm(rand_t({6}, 92), a, rand_t({5, 6}, 93)), Error);           // inner dims
  EXPECT_THROW(addmm(Tensor(), a, b), Error);                                   // no bias
  EXPECT_THROW(addmm(rand_t({6}, 94, DType::Float64), a, b), Error);           // bias dtype
  EXPECT_THROW(addmm(rand_t({5}, 95), a, b), Error);                            // does not broadcast
  EXPECT_THROW(addmm(rand_t({2, 3, 6}, 96), a, b), Error);                      // would grow the result
  EXPECT_THROW(addmm(rand_t({6}, 97), rand_t({2, 3, 4}, 98), rand_t({3, 4, 6}, 99)), Error);  // batch 2 vs 3
  try {
    addmm(rand_t({5}, 100), a, b);
    FAIL();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("addmm"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[5]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[3, 6]"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace moh
