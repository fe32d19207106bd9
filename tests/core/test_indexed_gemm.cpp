// indexed_gemm (core/cpu/indexed_gemm.h) against a naive triple loop, for every operand form the
// grouped projections use: A by gathered rows (a row may repeat), A transposed with gathered
// columns, B plain or transposed, C plain or through a row index with accumulation; sizes that cut
// the register tiles and the packed k and n blocks unevenly; the k == 0 and bits-per-row contracts; and a
// B packed once for several calls.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/cpu/indexed_gemm.h"
#include "core/error.h"

namespace moh::cpu {
namespace {

template <class T>
std::vector<T> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<T> v(n);
  for (T& x : v) x = T(dist(rng));
  return v;
}

// C(i, j) (+)= sum_k A(i, k) B(k, j) on views, in double.
template <class T>
std::vector<double> naive(int64_t m, int64_t n, int64_t k, const MatrixView<const T>& a, const MatrixView<const T>& b,
                          const std::vector<double>& c0) {
  std::vector<double> c = c0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) c[size_t(i * n + j)] += double(a.at(i, p)) * double(b.at(p, j));
  return c;
}

template <class T>
void expect_gathered_products(int64_t m, int64_t n, int64_t k, bool transposed_a, bool transposed_b, double tol) {
  SCOPED_TRACE(testing::Message() << "m " << m << " n " << n << " k " << k << " A^T " << transposed_a << " B^T "
                                  << transposed_b);
  const int64_t source_rows = m + 3;
  // A: rows of a [source_rows, k] matrix picked through an index that repeats one row, or the
  // transpose of a [source_rows, m] matrix whose rows k are picked.
  std::vector<int64_t> a_index(size_t(transposed_a ? k : m));
  for (size_t i = 0; i < a_index.size(); ++i) a_index[i] = int64_t((i * 7 + 2) % size_t(source_rows));
  if (a_index.size() > 2) a_index[1] = a_index[0];
  const std::vector<T> a_store = random_values<T>(size_t(source_rows * (transposed_a ? m : k) + 5), 1);
  const MatrixView<const T> a = transposed_a ? MatrixView<const T>{a_store.data(), 1, m, nullptr, a_index.data()}
                                             : MatrixView<const T>{a_store.data(), k, 1, a_index.data()};
  const std::vector<T> b_store = random_values<T>(size_t(k * n + 3), 2);
  const MatrixView<const T> b =
      transposed_b ? MatrixView<const T>{b_store.data(), 1, k} : MatrixView<const T>{b_store.data(), n};
  // C: rows of a [m + 4, n] matrix in reverse order, accumulated onto what is there.
  std::vector<int64_t> c_index(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) c_index[size_t(i)] = m + 3 - i;
  std::vector<T> c_store = random_values<T>(size_t((m + 4) * n), 3);
  std::vector<double> start(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) start[size_t(i * n + j)] = double(c_store[size_t(c_index[size_t(i)] * n + j)]);
  const std::vector<double> want = naive<T>(m, n, k, a, b, start);
  const std::vector<T> untouched = c_store;
  indexed_gemm<T>(m, n, k, a, b, {c_store.data(), n, 1, c_index.data()}, true);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      ASSERT_NEAR(double(c_store[size_t(c_index[size_t(i)] * n + j)]), want[size_t(i * n + j)], tol) << i << "," << j;
  for (int64_t r = 0; r < 4; ++r)  // rows no index names: unchanged
    for (int64_t j = 0; j < n; ++j) ASSERT_EQ(c_store[size_t(r * n + j)], untouched[size_t(r * n + j)]);

  // Overwriting into a plain C gives the products alone.
  std::vector<T> plain(size_t(m * n), T(7));
  indexed_gemm<T>(m, n, k, a, b, {plain.data(), n}, false);
  const std::vector<double> products = naive<T>(m, n, k, a, b, std::vector<double>(size_t(m * n), 0.0));
  for (size_t i = 0; i < plain.size(); ++i) ASSERT_NEAR(double(plain[i]), products[i], tol) << i;
}

TEST(IndexedGemm, MatchesNaiveInDoubleForEveryOperandForm) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      expect_gathered_products<double>(13, 37, 300, ta, tb, 1e-11);  // tiles and a k block cut unevenly
      expect_gathered_products<double>(6, 8, 5, ta, tb, 1e-12);      // exactly one register tile
      expect_gathered_products<double>(1, 290, 3, ta, tb, 1e-12);    // one row, two n blocks
    }
}

TEST(IndexedGemm, MatchesNaiveInFloat) {
  for (bool ta : {false, true}) {
    expect_gathered_products<float>(25, 70, 520, ta, false, 2e-4);
    expect_gathered_products<float>(7, 16, 64, ta, true, 2e-5);
  }
}

TEST(IndexedGemm, EmptyReductionZeroesOrKeepsC) {
  const std::vector<float> none;
  std::vector<float> c(6, 3.0f);
  indexed_gemm<float>(2, 3, 0, {none.data(), 0}, {none.data(), 3}, {c.data(), 3}, true);
  for (float v : c) EXPECT_EQ(v, 3.0f);
  indexed_gemm<float>(2, 3, 0, {none.data(), 0}, {none.data(), 3}, {c.data(), 3}, false);
  for (float v : c) EXPECT_EQ(v, 0.0f);
}

// A row's bits do not depend on the rows that share its call (the grouped projections' contract).
TEST(IndexedGemm, RowBitsIndependentOfTheRowsAround) {
  const int64_t n = 40, k = 700;
  const std::vector<float> a = random_values<float>(size_t(9 * k), 4), b = random_values<float>(size_t(k * n), 5);
  std::vector<float> all(static_cast<size_t>(9 * n)), one(static_cast<size_t>(n));
  indexed_gemm<float>(9, n, k, {a.data(), k}, {b.data(), n}, {all.data(), n}, false);
  for (int64_t r = 0; r < 9; ++r) {
    const int64_t row[1] = {r};
    indexed_gemm<float>(1, n, k, {a.data(), k, 1, row}, {b.data(), n}, {one.data(), n}, false);
    for (int64_t j = 0; j < n; ++j) ASSERT_EQ(one[size_t(j)], all[size_t(r * n + j)]) << r << "," << j;
  }
}

// B packed once gives the bits of the call that packs it, over two k blocks, with C through a row index.
TEST(IndexedGemm, PackedBGivesTheBitsOfPackingInTheCall) {
  const int64_t m = 13, n = 37, k = 300;
  const std::vector<float> a = random_values<float>(size_t(m * k), 6), b = random_values<float>(size_t(k * n), 7);
  std::vector<int64_t> rows(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) rows[size_t(i)] = (i * 5) % m;
  const std::vector<float> start = random_values<float>(size_t(m * n), 8);
  std::vector<float> packing = start, prepacked = start;
  indexed_gemm<float>(m, n, k, {a.data(), k}, {b.data(), n}, {packing.data(), n, 1, rows.data()}, true);
  PackedB<float> packed;
  packed.pack({b.data(), n}, k, n);
  indexed_gemm<float>(m, {a.data(), k}, packed, {prepacked.data(), n, 1, rows.data()}, true);
  EXPECT_EQ(prepacked, packing);
  EXPECT_NE(prepacked, start);
  EXPECT_THROW(packed.pack({b.data(), n}, 1, kPackedBWidth + 1), Error);
}

TEST(IndexedGemm, RejectsAnANotContiguousAlongEitherSide) {
  const std::vector<float> a(16), b(16);
  std::vector<float> c(4);
  EXPECT_THROW(indexed_gemm<float>(2, 2, 2, {a.data(), 4, 2}, {b.data(), 2}, {c.data(), 2}, false), Error);
}

}  // namespace
}  // namespace moh::cpu
