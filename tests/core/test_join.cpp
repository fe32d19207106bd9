// cat/stack against naive index arithmetic (non-contiguous and empty inputs, dims 0/1/-1) and
// split/chunk views (shapes, shared storage, uneven and empty splits), plus every error path.
#include <gtest/gtest.h>

#include "core/factory.h"
#include "core/ops.h"

namespace moh {
namespace {

Tensor iota(const Shape& shape, double start = 0, DType dtype = DType::Float32) {
  return arange(start, start + double(shape_numel(shape)), 1.0, dtype).view(shape);
}

// Naive cat over host copies: out[.., j, ..] along dim walks the inputs in order.
std::vector<double> reference_cat(const std::vector<Tensor>& ts, int64_t d, const Shape& out_shape) {
  int64_t outer = 1, inner = 1;
  for (int64_t e = 0; e < d; ++e) outer *= out_shape[size_t(e)];
  for (size_t e = size_t(d) + 1; e < out_shape.size(); ++e) inner *= out_shape[e];
  std::vector<std::vector<double>> values;
  for (const Tensor& t : ts) values.push_back(t.to_vector<double>());
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < ts.size(); ++k) {
      if (ts[k].shape() == Shape{0} && out_shape.size() != 1) continue;
      const int64_t block = ts[k].size(d) * inner;
      out.insert(out.end(), values[k].begin() + o * block, values[k].begin() + (o + 1) * block);
    }
  return out;
}

TEST(Join, CatDimsWithStridedAndEmptyInputs) {
  Tensor a = iota({2, 3, 4});
  Tensor b = iota({4, 2, 3}, 100).permute({1, 2, 0});  // [2, 3, 4], non-contiguous
  Tensor e0 = zeros({0, 3, 4}), e1 = zeros({2, 0, 4}), e2 = zeros({2, 3, 0});
  const std::vector<std::pair<int64_t, Tensor>> cases{{0, e0}, {1, e1}, {-1, e2}};
  for (const auto& [dim, empty] : cases) {
    std::vector<Tensor> ts{a, empty, b, a.narrow(dim < 0 ? 2 : dim, 1, 1)};
    Tensor got = cat(ts, dim);
    const int64_t d = dim < 0 ? dim + 3 : dim;
    Shape shape = a.shape();
    shape[size_t(d)] = 2 * a.size(d) + 1;
    ASSERT_EQ(got.shape(), shape);
    EXPECT_EQ(got.to_vector<double>(), reference_cat(ts, d, shape)) << "dim " << dim;
  }
  // Legacy 1-D [0] tensors are skipped; a single input is still copied.
  Tensor legacy = cat({zeros({0}), a, zeros({0})}, 1);
  EXPECT_EQ(legacy.to_vector<float>(), a.to_vector<float>());
  EXPECT_FALSE(legacy.shares_storage(a));
  EXPECT_EQ(cat({zeros({0}), zeros({0})}, 0).shape(), (Shape{0}));
  EXPECT_EQ(cat({iota({3}, 0, DType::Int64), iota({2}, 7, DType::Int64)}, 0).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 1, 2, 7, 8}));
  Tensor big = iota({300, 200});
  EXPECT_EQ(cat({big, big.t().t()}, 1).to_vector<double>(), reference_cat({big, big}, 1, {300, 400}));
}

TEST(Join, Stack) {
  Tensor a = iota({2, 3}), b = iota({3, 2}, 10).t();
  for (int64_t dim : {0, 1, 2, -1}) {
    Tensor s = stack({a, b}, dim);
    const int64_t d = dim < 0 ? dim + 3 : dim;
    Shape shape{2, 3};
    shape.insert(shape.begin() + d, 2);
    ASSERT_EQ(s.shape(), shape);
    auto v = s.to_vector<float>();
    auto av = a.to_vector<float>(), bv = b.to_vector<float>();
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) {
        std::vector<int64_t> ia{i, j}, ib{i, j};
        ia.insert(ia.begin() + d, 0);
        ib.insert(ib.begin() + d, 1);
        auto flat = [&](const std::vector<int64_t>& q) { return (q[0] * shape[1] + q[1]) * shape[2] + q[2]; };
        EXPECT_EQ(v[size_t(flat(ia))], av[size_t(i * 3 + j)]);
        EXPECT_EQ(v[size_t(flat(ib))], bv[size_t(i * 3 + j)]);
      }
  }
  EXPECT_EQ(stack({scalar_tensor(1), scalar_tensor(2)}, 0).to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST(Join, SplitReturnsViews) {
  Tensor x = iota({7, 4});
  auto parts = split(x, 3, 0);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].shape(), (Shape{3, 4}));
  EXPECT_EQ(parts[2].shape(), (Shape{1, 4}));
  for (const Tensor& p : parts) EXPECT_TRUE(p.shares_storage(x));
  EXPECT_EQ(parts[2].to_vector<float>(), (std::vector<float>{24, 25, 26, 27}));
  Tensor w = parts[1];
  fill_(w, -1.0);  // writes through to x
  EXPECT_EQ(x.to_vector<float>()[12], -1.0f);
  auto cols = split(x.t(), {1, 0, 6}, -1);  // [4, 7] split along dim 1
  ASSERT_EQ(cols.size(), 3u);
  EXPECT_EQ(cols[0].shape(), (Shape{4, 1}));
  EXPECT_EQ(cols[1].shape(), (Shape{4, 0}));
  EXPECT_EQ(cols[2].shape(), (Shape{4, 6}));
  EXPECT_TRUE(cols[2].shares_storage(x));
  EXPECT_EQ(cols[2].to_vector<float>()[0], 4.0f);
  EXPECT_EQ(cat(split(x, 2, 1), 1).to_vector<float>(), x.to_vector<float>());
  auto none = split(zeros({0, 3}), 0, 0);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].shape(), (Shape{0, 3}));
}

TEST(Join, Chunk) {
  Tensor x = iota({5, 2});
  auto c = chunk(x, 4, 0);  // ceil(5 / 4) = 2 rows each -> 3 chunks
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(c[2].shape(), (Shape{1, 2}));
  EXPECT_TRUE(c[2].shares_storage(x));
  auto exact = chunk(iota({2, 6}), 3, 1);
  ASSERT_EQ(exact.size(), 3u);
  EXPECT_EQ(exact[1].to_vector<float>(), (std::vector<float>{2, 3, 8, 9}));
  auto empties = chunk(zeros({0, 2}), 3, 0);
  ASSERT_EQ(empties.size(), 3u);
  EXPECT_EQ(empties[2].shape(), (Shape{0, 2}));
}

TEST(Join, Errors) {
  Tensor a = iota({2, 3});
  EXPECT_THROW(cat({}, 0), Error);
  EXPECT_THROW(cat({a, a.to(DType::Float64)}, 0), Error);
  EXPECT_THROW(cat({a, iota({2, 4})}, 0), Error);     // differs off the cat dim
  EXPECT_THROW(cat({a, iota({2, 3, 1})}, 0), Error);  // rank
  EXPECT_THROW(cat({a, a}, 2), Error);
  EXPECT_THROW(cat({scalar_tensor(1), scalar_tensor(2)}, 0), Error);
  EXPECT_THROW(cat({a, Tensor()}, 0), Error);
  EXPECT_THROW(stack({}, 0), Error);
  EXPECT_THROW(stack({a, a.t()}, 0), Error);
  EXPECT_THROW(stack({a, a}, 3), Error);
  EXPECT_THROW(split(a, 0, 0), Error);
  EXPECT_THROW(split(a, -1, 0), Error);
  EXPECT_THROW(split(a, {1, 1}, 1), Error);  // sums to 2, not 3
  EXPECT_THROW(split(a, {4, -1}, 1), Error);
  EXPECT_THROW(split(a, 1, 2), Error);
  EXPECT_THROW(split(scalar_tensor(1), 1, 0), Error);
  EXPECT_THROW(chunk(a, 0, 0), Error);
  EXPECT_THROW(chunk(Tensor(), 2, 0), Error);
}

}  // namespace
}  // namespace moh
