// topk, one_hot, gather/scatter/scatter_add and index_select/index_add against naive loops over
// host copies: ties and NaN in topk, dims 0/1/-1, non-contiguous inputs, duplicate indices, empty
// and 0-d edges, and every error path (including the position named by range errors).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/factory.h"
#include "core/ops.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using test::rand_t;
using test::rand_index;

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return flat;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ------------------------------------------------------------------------------------- topk

void expect_topk(const Tensor& x, int64_t k, bool largest) {
  TopK r = topk(x, k, largest);
  const int64_t len = x.size(-1), rows = x.numel() / std::max<int64_t>(len, 1);
  Shape shape = x.shape();
  shape.back() = k;
  ASSERT_EQ(r.values.shape(), shape);
  ASSERT_EQ(r.indices.shape(), shape);
  EXPECT_EQ(r.indices.dtype(), DType::Int64);
  auto xv = x.to_vector<double>();
  auto vv = r.values.to_vector<double>();
  auto iv = r.indices.to_vector<int64_t>();
  for (int64_t row = 0; row < rows; ++row) {
    std::vector<int64_t> order(static_cast<size_t>(len));
    std::iota(order.begin(), order.end(), 0);
    auto key = [&](int64_t i) {
      double v = xv[size_t(row * len + i)];
      return std::isnan(v) ? INFINITY
                           : v;  // NaN ranks above everything (and ties with +inf never occur here)
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return largest ? key(a) > key(b) : key(a) < key(b); });
    for (int64_t j = 0; j < k; ++j) {
      ASSERT_EQ(iv[size_t(row * k + j)], order[size_t(j)]) << "row " << row << " rank " << j;
      double want = xv[size_t(row * len + order[size_t(j)])], got = vv[size_t(row * k + j)];
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(got));
      else
        EXPECT_EQ(got, want);
    }
  }
}

TEST(Indexing, TopkTiesAndEdgeK) {
  // Values in a small integer range so most rows have ties.
  Tensor x = rand_index({6, 9}, 4, 1).to(DType::Float32);
  for (bool largest : {true, false})
    for (int64_t k : {int64_t(0), int64_t(1), int64_t(3), int64_t(9)}) expect_topk(x, k, largest);
  // Long rows with ties, for k on both sides of the insertion/selection switch.
  Tensor wide = rand_index({4, 40}, 5, 100).to(DType::Float32);
  for (bool largest : {true, false})
    for (int64_t k : {int64_t(16), int64_t(17), int64_t(25), int64_t(40)}) expect_topk(wide, k, largest);
  auto r = topk(from_vector<float>({2, 5, 5, 1, 5}, {5}), 2);
  EXPECT_EQ(r.indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r.values.to_vector<float>(), (std::vector<float>{5, 5}));
}

TEST(Indexing, TopkNonContiguousLargeAndInt) {
  expect_topk(rand_t({40, 7}, 2).t(), 5, true);    // rows of length 40, strided
  expect_topk(rand_t({3, 2, 3000}, 3), 17, true);  // parallel path
  expect_topk(rand_t({3, 2, 3000}, 4, DType::Float64), 3000, false);
  expect_topk(rand_index({5, 8}, 3, 5), 4, false);  // int64 with ties
  expect_topk(zeros({0, 4}), 2, true);
}

TEST(Indexing, TopkNaNRanksLargest) {
  Tensor x = from_vector<float>({1, NAN, 3, NAN, -2}, {1, 5});
  auto r = topk(x, 3, true);
  EXPECT_EQ(r.indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 2}));
  auto s = topk(x, 4, false);
  EXPECT_EQ(s.indices.to_vector<int64_t>(), (std::vector<int64_t>{4, 0, 2, 1}));
  expect_topk(x, 5, true);
  expect_topk(x, 5, false);
  std::vector<float> long_row(30);
  for (size_t i = 0; i < long_row.size(); ++i) long_row[i] = i % 7 == 3 ? NAN : float(i % 5);
  Tensor y = from_vector<float>(long_row, {1, 30});
  for (int64_t k : {int64_t(4), int64_t(20), int64_t(30)}) {
    expect_topk(y, k, true);
    expect_topk(y, k, false);
  }
}

TEST(Indexing, TopkErrors) {
  Tensor x = rand_t({2, 4}, 6);
  EXPECT_THROW(topk(x, 5), Error);
  EXPECT_THROW(topk(x, -1), Error);
  EXPECT_THROW(topk(scalar_tensor(1.0), 1), Error);
  EXPECT_THROW(topk(x.to(DType::Bool), 1), Error);
  EXPECT_THROW(topk(Tensor(), 1), Error);
}

// ------------------------------------------------------------------------------------- one_hot

TEST(Indexing, OneHot) {
  Tensor idx = from_vector<int64_t>({2, 0, 3, 2, 1, 0}, {2, 3});
  Tensor o = one_hot(idx.t(), 4, DType::Float32);  // non-contiguous indices
  EXPECT_EQ(o.shape(), (Shape{3, 2, 4}));
  EXPECT_EQ(o.dtype(), DType::Float32);
  auto v = o.to_vector<float>();
  auto iv = idx.t().to_vector<int64_t>();
  for (size_t p = 0; p < iv.size(); ++p)
    for (int64_t c = 0; c < 4; ++c) EXPECT_EQ(v[p * 4 + size_t(c)], c == iv[p] ? 1.0f : 0.0f);
  EXPECT_EQ(one_hot(scalar_tensor(1, DType::Int64), 3).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(one_hot(zeros({0}, DType::Int64), 3).shape(), (Shape{0, 3}));
  EXPECT_EQ(one_hot(from_vector<int64_t>({1}, {1}), 2, DType::Bool).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 1}));
}

TEST(Indexing, OneHotErrors) {
  Tensor idx = from_vector<int64_t>({0, 1, 2, 5, 1, 0}, {2, 3});
  std::string msg = error_of([&] { one_hot(idx, 4); });
  EXPECT_NE(msg.find("one_hot"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[1, 0] = 5"), std::string::npos) << msg;
  EXPECT_THROW(one_hot(from_vector<int64_t>({-1}, {1}), 4), Error);
  EXPECT_THROW(one_hot(idx, 0), Error);
  EXPECT_THROW(one_hot(idx.to(DType::Int32), 6), Error);
  EXPECT_THROW(one_hot(Tensor(), 6), Error);
}

// ------------------------------------------------------------------------------------- gather / scatter

void expect_gather(const Tensor& x, int64_t dim, const Tensor& index) {
  Tensor got = gather(x, dim, index);
  ASSERT_EQ(got.shape(), index.shape());
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  auto xv = x.to_vector<double>(), gv = got.to_vector<double>();
  auto iv = index.to_vector<int64_t>();
  for (int64_t p = 0; p < index.numel(); ++p) {
    auto q = unravel(p, index.shape());
    q[size_t(d)] = iv[size_t(p)];
    ASSERT_EQ(gv[size_t(p)], xv[size_t(ravel(q, x.shape()))]) << "position " << p;
  }
}

void expect_scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, bool add) {
  Tensor got = add ? scatter_add(x, dim, index, src) : scatter(x, dim, index, src);
  ASSERT_EQ(got.shape(), x.shape());
  EXPECT_FALSE(got.shares_storage(x));
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  auto want = x.to_vector<double>();
  auto sv = src.to_vector<double>();
  auto iv = index.to_vector<int64_t>();
  for (int64_t p = 0; p < index.numel(); ++p) {
    auto q = unravel(p, index.shape());
    double v = sv[size_t(ravel(q, src.shape()))];
    q[size_t(d)] = iv[size_t(p)];
    double& o = want[size_t(ravel(q, x.shape()))];
    o = add ? o + v : v;
  }
  auto gv = got.to_vector<double>();
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(gv[i], want[i], 1e-5) << "element " << i;
}

TEST(Indexing, GatherDims) {
  Tensor x = rand_t({5, 6, 4}, 7).permute({1, 0, 2});  // [6, 5, 4], non-contiguous
  expect_gather(x, 0, rand_index({3, 5, 4}, 6, 8));
  expect_gather(x, 1, rand_index({6, 7, 2}, 5, 9));  // index larger than x along dim, smaller elsewhere
  expect_gather(x, -1, rand_index({4, 5, 3}, 4, 10));
  expect_gather(x, 2,
                rand_index({6, 5, 4}, 4, 11).transpose(0, 1).contiguous().transpose(0, 1));  // strided index
  expect_gather(rand_t({300, 200}, 12), 1, rand_index({300, 120}, 200, 13));                 // parallel path
  expect_gather(rand_t({4, 3}, 14).to(DType::Int64), 0, rand_index({2, 3}, 4, 15));
  expect_gather(rand_t({4, 3}, 16), 1, zeros({4, 0}, DType::Int64));
  EXPECT_EQ(gather(scalar_tensor(7.0), 0, scalar_tensor(0, DType::Int64)).item<float>(), 7.0f);
}

TEST(Indexing, ScatterAndScatterAddDims) {
  Tensor x = rand_t({4, 6, 5}, 17).transpose(0, 2);  // [5, 6, 4], non-contiguous
  for (bool add : {false, true}) {
    // Few distinct values so duplicates are frequent.
    expect_scatter(x, 0, rand_index({3, 6, 4}, 2, 18), rand_t({3, 6, 4}, 19), add);
    expect_scatter(x, 1, rand_index({5, 9, 3}, 6, 20), rand_t({9, 5, 4}, 21).transpose(0, 1), add);
    expect_scatter(x, -1, rand_index({2, 6, 7}, 4, 22), rand_t({3, 7, 7}, 23), add);  // src larger than index
    expect_scatter(rand_t({200, 300}, 24), 1, rand_index({200, 290}, 300, 25), rand_t({200, 290}, 26), add);
  }
  // Duplicates: scatter keeps the last write along the dim, scatter_add sums all.
  Tensor idx = from_vector<int64_t>({1, 1, 1}, {1, 3});
  Tensor src = from_vector<float>({1, 2, 4}, {1, 3});
  EXPECT_EQ(scatter(zeros({1, 3}), 1, idx, src).to_vector<float>(), (std::vector<float>{0, 4, 0}));
  EXPECT_EQ(scatter_add(zeros({1, 3}), 1, idx, src).to_vector<float>(), (std::vector<float>{0, 7, 0}));
  Tensor one = scatter(scalar_tensor(1.0), 0, scalar_tensor(0, DType::Int64), scalar_tensor(5.0));
  EXPECT_EQ(one.dim(), 0);
  EXPECT_EQ(one.item<float>(), 5.0f);
}

TEST(Indexing, GatherScatterErrors) {
  Tensor x = rand_t({3, 4}, 27);
  Tensor idx = from_vector<int64_t>({0, 1, 3, 2}, {2, 2});
  std::string msg = error_of([&] { gather(x, 0, idx); });
  EXPECT_NE(msg.find("gather"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index[1, 0] = 3"), std::string::npos) << msg;
  EXPECT_THROW(gather(x, 0, from_vector<int64_t>({-1}, {1, 1})), Error);
  EXPECT_THROW(gather(x, 1, from_vector<int64_t>({0, 1}, {2})), Error);  // rank mismatch
  EXPECT_THROW(gather(x, 1, zeros({4, 2}, DType::Int64)), Error);        // larger than x off dim
  EXPECT_THROW(gather(x, 2, zeros({3, 2}, DType::Int64)), Error);        // bad dim
  EXPECT_THROW(gather(x, 1, zeros({3, 2}, DType::Int32)), Error);        // index dtype
  EXPECT_THROW(gather(Tensor(), 1, zeros({3, 2}, DType::Int64)), Error);
  Tensor src = rand_t({2, 2}, 28);
  EXPECT_NO_THROW(scatter(x, 1, idx, src));
  EXPECT_THROW(scatter(x, 0, idx, src), Error);                          // 3 out of range for dim 0
  EXPECT_THROW(scatter(x, 1, zeros({2, 3}, DType::Int64), src), Error);  // index larger than src
  EXPECT_THROW(scatter(x, 1, zeros({2, 2}, DType::Int64), src.to(DType::Float64)), Error);
  EXPECT_THROW(scatter(x, 1, zeros({2, 2}, DType::Int64), rand_t({2}, 29)), Error);
  EXPECT_THROW(scatter_add(x.to(DType::Bool), 1, zeros({2, 2}, DType::Int64), src.to(DType::Bool)), Error);
}

// ------------------------------------------------------------------------------------- index_select /
// index_add

TEST(Indexing, IndexSelectDims) {
  Tensor x = rand_t({4, 5, 6}, 30).permute({2, 0, 1});  // [6, 4, 5]
  for (int64_t dim : {0, 1, -1}) {
    const int64_t d = dim < 0 ? dim + 3 : dim;
    Tensor idx = rand_index({7}, x.size(d), uint32_t(31 + d));
    Tensor got = index_select(x, dim, idx);
    Shape shape = x.shape();
    shape[size_t(d)] = 7;
    ASSERT_EQ(got.shape(), shape);
    auto xv = x.to_vector<float>(), gv = got.to_vector<float>();
    auto iv = idx.to_vector<int64_t>();
    for (int64_t p = 0; p < got.numel(); ++p) {
      auto q = unravel(p, shape);
      q[size_t(d)] = iv[size_t(q[size_t(d)])];
      ASSERT_EQ(gv[size_t(p)], xv[size_t(ravel(q, x.shape()))]);
    }
  }
  Tensor strided_idx = from_vector<int64_t>({3, 9, 0, 9, 1, 9}, {6}).slice(0, 0, 6, 2);  // {3, 0, 1}
  EXPECT_EQ(index_select(arange(5, DType::Float32), 0, strided_idx).to_vector<float>(),
            (std::vector<float>{3, 0, 1}));
  EXPECT_EQ(index_select(rand_t({3, 2}, 34), 0, zeros({0}, DType::Int64)).shape(), (Shape{0, 2}));
}

TEST(Indexing, IndexAddAccumulatesDuplicates) {
  Tensor x = rand_t({5, 3}, 35).t();  // [3, 5]
  Tensor idx = from_vector<int64_t>({4, 0, 4, 4}, {4});
  Tensor src = rand_t({3, 4}, 36);
  Tensor got = index_add(x, 1, idx, src);
  auto want = x.to_vector<double>();
  auto sv = src.to_vector<double>();
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t j = 0; j < 4; ++j)
      want[size_t(r * 5 + idx.to_vector<int64_t>()[size_t(j)])] += sv[size_t(r * 4 + j)];
  auto gv = got.to_vector<double>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(gv[i], want[i], 1e-6);
  // index_add is the adjoint of index_select: <index_select(x), g> == <x, index_add(0, g)>.
  Tensor big = rand_t({50, 8}, 37), big_idx = rand_index({30}, 50, 38), g = rand_t({30, 8}, 39);
  auto sel = index_select(big, 0, big_idx).to_vector<double>(), gvv = g.to_vector<double>();
  auto adj = index_add(zeros({50, 8}), 0, big_idx, g).to_vector<double>(), bv = big.to_vector<double>();
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < sel.size(); ++i) lhs += sel[i] * gvv[i];
  for (size_t i = 0; i < bv.size(); ++i) rhs += bv[i] * adj[i];
  EXPECT_NEAR(lhs, rhs, 1e-4);
}

// index_select / index_add / index_select_backward against the loops over host copies for the layouts
// whose dim-0 rows are contiguous blocks (moved whole) and for ones that are not (moved element by element).
void expect_rows_moved(const Tensor& x, const Tensor& idx, DType dtype) {
  const int64_t n = idx.numel(), rows = x.size(0), row = x.numel() / rows;
  auto iv = idx.to_vector<int64_t>();
  auto xv = x.to_vector<double>();
  auto sel = index_select(x, 0, idx).to_vector<double>();
  ASSERT_EQ(sel.size(), size_t(n * row));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < row; ++j)
      ASSERT_EQ(sel[size_t(r * row + j)], xv[size_t(iv[size_t(r)] * row + j)]) << "row " << r << " element " << j;
  Shape src_shape = x.shape();
  src_shape[0] = n;
  const Tensor src = rand_t(src_shape, 60).to(dtype);
  auto sv = src.to_vector<double>();
  const auto in_dtype = [dtype](double v) { return from_vector<double>({v}, {1}).to(dtype).item<double>(); };
  std::vector<double> want = xv, want_zero(xv.size(), 0.0);
  for (int64_t r = 0; r < n; ++r)  // in index order, as the kernels add duplicates
    for (int64_t j = 0; j < row; ++j) {
      const size_t at = size_t(iv[size_t(r)] * row + j);
      want[at] = in_dtype(want[at] + sv[size_t(r * row + j)]);
      want_zero[at] = in_dtype(want_zero[at] + sv[size_t(r * row + j)]);
    }
  EXPECT_EQ(index_add(x, 0, idx, src).to_vector<double>(), want);
  const Tensor back = index_select_backward(src, 0, idx, rows);
  EXPECT_EQ(back.shape(), x.shape());
  EXPECT_EQ(back.to_vector<double>(), want_zero);
}

TEST(Indexing, WholeRowsAndElementWalksAgree) {
  const Tensor dup = from_vector<int64_t>({3, 0, 3, 5, 3, 1}, {6});  // duplicates: added in index order
  for (DType dtype : {DType::Float32, DType::Float64}) {  // index_add takes no 16-bit floats
    SCOPED_TRACE(dtype_name(dtype));
    expect_rows_moved(rand_t({6, 3, 4}, 61).to(dtype), dup, dtype);                     // contiguous rows
    expect_rows_moved(rand_t({6, 2, 5}, 62).to(dtype).narrow(1, 1, 1), dup, dtype);     // a size-1 dim, gaps
    expect_rows_moved(rand_t({6, 7}, 63).to(dtype).narrow(1, 2, 4), dup, dtype);        // rows with gaps
    expect_rows_moved(rand_t({7, 6}, 64).to(dtype).t().contiguous().t().narrow(0, 0, 6), dup, dtype);  // columns
    expect_rows_moved(rand_t({6}, 65).to(dtype), dup, dtype);                                          // 1-D
  }
  expect_rows_moved(rand_t({3000, 16}, 66), rand_index({4000}, 3000, 67), DType::Float32);  // parallel gather
  const int before = num_threads();  // the parallel scatter's bands of output rows, split evenly and not
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(str_cat(threads, " threads"));
    set_num_threads(threads);
    expect_rows_moved(rand_t({3001, 16}, 70), rand_index({4000}, 3001, 71), DType::Float32);
  }
  set_num_threads(before);
  const Tensor ints = rand_index({6, 4}, 100, 68);  // whole int64 rows: row 0 of the result is row 3
  const std::vector<int64_t> iv = ints.to_vector<int64_t>(), got = index_select(ints, 0, dup).to_vector<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(got.begin(), got.begin() + 4), std::vector<int64_t>(iv.begin() + 12, iv.begin() + 16));
  const Tensor strided_idx = from_vector<int64_t>({5, 9, 0, 9, 2, 9}, {6}).slice(0, 0, 6, 2);  // {5, 0, 2}
  expect_rows_moved(rand_t({6, 3}, 69), strided_idx, DType::Float32);
}

TEST(Indexing, IndexSelectAddErrors) {
  Tensor x = rand_t({3, 4}, 40);
  std::string msg = error_of([&] { index_select(x, 1, from_vector<int64_t>({0, 4}, {2})); });
  EXPECT_NE(msg.find("index_select"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index[1] = 4"), std::string::npos) << msg;
  EXPECT_THROW(index_select(x, 0, zeros({1, 1}, DType::Int64)), Error);  // not 1-D
  EXPECT_THROW(index_select(x, 0, zeros({1}, DType::Int32)), Error);
  EXPECT_THROW(index_select(x, 2, zeros({1}, DType::Int64)), Error);
  EXPECT_THROW(index_select(scalar_tensor(1.0), 0, zeros({1}, DType::Int64)), Error);
  Tensor idx = from_vector<int64_t>({0, 2}, {2});
  EXPECT_THROW(index_add(x, 0, idx, rand_t({2, 3}, 41)), Error);  // src shape
  EXPECT_THROW(index_add(x, 0, idx, rand_t({2, 4}, 42, DType::Float64)), Error);
  EXPECT_THROW(index_add(x, 0, from_vector<int64_t>({3}, {1}), rand_t({1, 4}, 43)), Error);
  EXPECT_THROW(index_add(x.to(DType::Bool), 0, idx, rand_t({2, 4}, 44).to(DType::Bool)), Error);
  msg = error_of([&] { index_select_backward(rand_t({2, 4}, 45), 0, from_vector<int64_t>({0, 3}, {2}), 3); });
  EXPECT_NE(msg.find("index_select_backward"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index[1] = 3"), std::string::npos) << msg;
  msg = error_of([&] { index_select_backward(rand_t({3, 4}, 46), 0, idx, 3); });
  EXPECT_NE(msg.find("must have 2 entries"), std::string::npos) << msg;
  EXPECT_THROW(index_select_backward(rand_t({2, 4}, 47), 2, idx, 3), Error);
  EXPECT_THROW(index_select_backward(rand_t({2, 4}, 48), 0, idx, -1), Error);
  EXPECT_THROW(index_select_backward(Tensor(), 0, idx, 3), Error);
  EXPECT_THROW(index_select_backward(rand_t({2, 4}, 49).to(DType::Bool), 0, idx, 3), Error);
}

}  // namespace
}  // namespace moh
