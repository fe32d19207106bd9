// embedding and embedding_backward against naive loops: repeated indices, non-contiguous weight,
// indices and grad, 0-d and empty indices, thread-count-independent (bitwise) backward, and errors.
#include <gtest/gtest.h>

#include <random>

#include "core/factory.h"
#include "core/ops.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using test::rand_t;
using test::rand_index;

void expect_embedding(const Tensor& weight, const Tensor& indices) {
  Tensor out = embedding(weight, indices);
  const int64_t dim = weight.size(1);
  Shape shape = indices.shape();
  shape.push_back(dim);
  ASSERT_EQ(out.shape(), shape);
  EXPECT_EQ(out.dtype(), weight.dtype());
  auto wv = weight.to_vector<double>(), ov = out.to_vector<double>();
  auto iv = indices.to_vector<int64_t>();
  for (size_t p = 0; p < iv.size(); ++p)
    for (int64_t j = 0; j < dim; ++j)
      ASSERT_EQ(ov[p * size_t(dim) + size_t(j)], wv[size_t(iv[p] * dim + j)]) << "position " << p;
}

void expect_backward(const Tensor& grad, const Tensor& indices, int64_t rows) {
  Tensor gw = embedding_backward(grad, indices, rows);
  const int64_t dim = grad.size(-1);
  ASSERT_EQ(gw.shape(), (Shape{rows, dim}));
  EXPECT_EQ(gw.dtype(), grad.dtype());
  std::vector<double> want(size_t(rows * dim), 0.0);
  auto gv = grad.to_vector<double>();
  auto iv = indices.to_vector<int64_t>();
  for (size_t p = 0; p < iv.size(); ++p)
    for (int64_t j = 0; j < dim; ++j) want[size_t(iv[p] * dim + j)] += gv[p * size_t(dim) + size_t(j)];
  auto got = gw.to_vector<double>();
  const double tol = grad.dtype() == DType::Float64 ? 1e-12 : 1e-6;
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(Embedding, ForwardRepeatedAndStrided) {
  Tensor w = rand_t({7, 5}, 1);
  Tensor idx = from_vector<int64_t>({3, 3, 0, 6, 3, 1, 0, 6}, {2, 4});
  expect_embedding(w, idx);
  expect_embedding(rand_t({5, 7}, 2).t(), idx.t());           // column-strided weight, strided indices
  expect_embedding(rand_t({7, 12}, 3).narrow(1, 2, 5), idx);  // padded rows
  expect_embedding(rand_index({7, 3}, 100, 4), idx);          // int64 weight
  expect_embedding(w, scalar_tensor(4, DType::Int64));        // 0-d indices -> [D]
  expect_embedding(w, zeros({0, 3}, DType::Int64));
  expect_embedding(rand_t({1000, 64}, 5), rand_index({40, 50}, 1000, 6));  // parallel path
}

TEST(Embedding, BackwardAccumulatesRepeatedIndices) {
  Tensor idx = from_vector<int64_t>({3, 3, 0, 6, 3, 1, 0, 6}, {2, 4});
  expect_backward(rand_t({2, 4, 5}, 7), idx, 7);
  expect_backward(rand_t({2, 4, 5}, 8), idx, 10);                    // rows never hit stay 0
  expect_backward(rand_t({5, 4, 2}, 9).permute({2, 1, 0}), idx, 7);  // non-contiguous grad
  expect_backward(rand_t({2, 4, 3}, 10, DType::Float64), idx, 7);
  expect_backward(rand_t({0, 3}, 11), zeros({0}, DType::Int64), 4);  // no positions: all zeros
  expect_backward(rand_t({3}, 12), scalar_tensor(2, DType::Int64), 4);
  Tensor one = embedding_backward(full({3, 2}, 0.1), from_vector<int64_t>({1, 1, 1}, {3}), 2);
  EXPECT_EQ(one.to_vector<float>()[2], float(3.0 * double(0.1f)));  // summed in double, rounded once
}

TEST(Embedding, BackwardIsDeterministicAcrossThreadCounts) {
  Tensor idx = rand_index({300, 40}, 50, 13);  // many duplicates per row
  Tensor grad = rand_t({300, 40, 32}, 14);
  expect_backward(grad, idx, 50);
  const int threads = num_threads();
  set_num_threads(1);
  auto serial = embedding_backward(grad, idx, 50).to_vector<float>();
  set_num_threads(std::max(2, threads));
  auto parallel = embedding_backward(grad, idx, 50).to_vector<float>();
  set_num_threads(threads);
  EXPECT_EQ(serial, parallel);
}

TEST(Embedding, Errors) {
  Tensor w = rand_t({5, 3}, 15);
  Tensor idx = from_vector<int64_t>({0, 1, 2, 4, 7, 1}, {2, 3});
  try {
    embedding(w, idx);
    FAIL() << "expected an out-of-range error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("embedding"), std::string::npos) << msg;
    EXPECT_NE(msg.find("indices[1, 1] = 7"), std::string::npos) << msg;
  }
  EXPECT_THROW(embedding(w, from_vector<int64_t>({-1}, {1})), Error);
  EXPECT_THROW(embedding(rand_t({5}, 16), from_vector<int64_t>({0}, {1})), Error);
  EXPECT_THROW(embedding(w, from_vector<int32_t>({0}, {1})), Error);
  EXPECT_THROW(embedding(Tensor(), from_vector<int64_t>({0}, {1})), Error);
  Tensor good = from_vector<int64_t>({0, 1}, {2});
  EXPECT_THROW(embedding_backward(rand_t({3, 3}, 17), good, 5), Error);  // grad rows != positions
  EXPECT_THROW(embedding_backward(rand_t({2}, 18), good, 5), Error);     // missing D
  EXPECT_THROW(embedding_backward(rand_t({2, 3}, 19), good, -1), Error);
  EXPECT_THROW(embedding_backward(rand_t({2, 3}, 20), good, 1), Error);  // index 1 >= 1 row
  EXPECT_THROW(embedding_backward(rand_t({2, 3}, 21).to(DType::Int64), good, 5), Error);
  EXPECT_THROW(embedding_backward(rand_t({2, 3}, 22), good.to(DType::Int32), 5), Error);
}

}  // namespace
}  // namespace moh
