// small_gemm (core/cpu/small_gemm.h, attention's block products at small heads) against a naive
// double loop: every n from 1 to kSmallGemmMax (each vector count, whole and partial), k across its
// range, A and B plain or transposed with padded leading dimensions, the alpha/beta forms attention uses
// (scale with beta 0, accumulation with beta 1, scale with accumulation), float and double; beta 0
// never reading C (NaN there stays out); and a row's bits not depending on the rows computed with it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "core/cpu/small_gemm.h"

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

// A stored [m, k] (or [k, m] when transposed) and B [k, n] (or [n, k]), each row padded by 3.
template <class T>
struct Problem {
  int64_t m, n, k;
  GemmOperand a, b;
  std::vector<T> av, bv;
  T a_at(int64_t i, int64_t p) const { return a.transposed ? av[size_t(p * a.ld + i)] : av[size_t(i * a.ld + p)]; }
  T b_at(int64_t p, int64_t j) const { return b.transposed ? bv[size_t(j * b.ld + p)] : bv[size_t(p * b.ld + j)]; }
};

template <class T>
Problem<T> problem(int64_t m, int64_t n, int64_t k, bool ta, bool tb, uint32_t seed) {
  Problem<T> p{m, n, k, {ta, (ta ? m : k) + 3}, {tb, (tb ? k : n) + 3}, {}, {}};
  p.av = random_values<T>(size_t((ta ? k : m) * p.a.ld), seed);
  p.bv = random_values<T>(size_t((tb ? n : k) * p.b.ld), seed + 1);
  return p;
}

template <class T>
void expect_products(int64_t m, int64_t n, int64_t k, bool ta, bool tb, T alpha, T beta, double tol) {
  SCOPED_TRACE(testing::Message() << "m " << m << " n " << n << " k " << k << " A^T " << ta << " B^T " << tb
                                  << " alpha " << alpha << " beta " << beta);
  const Problem<T> p = problem<T>(m, n, k, ta, tb, uint32_t(m * 131 + n * 7 + k));
  const int64_t ldc = n + 2;
  std::vector<T> c = random_values<T>(size_t(m * ldc), 99);
  if (beta == T(0)) std::fill(c.begin(), c.end(), std::numeric_limits<T>::quiet_NaN());
  const std::vector<T> c0 = c;
  small_gemm<T>(p.a, p.b, m, n, k, alpha, p.av.data(), p.bv.data(), beta, c.data(), ldc);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t q = 0; q < k; ++q) want += double(p.a_at(i, q)) * double(p.b_at(q, j));
      want = double(alpha) * want + (beta == T(0) ? 0.0 : double(beta) * double(c0[size_t(i * ldc + j)]));
      ASSERT_NEAR(double(c[size_t(i * ldc + j)]), want, tol * (1 + std::abs(want))) << "C(" << i << ", " << j << ")";
    }
    for (int64_t j = n; j < ldc; ++j)  // the padding past column n is left alone
      ASSERT_TRUE(std::isnan(c[size_t(i * ldc + j)]) == std::isnan(c0[size_t(i * ldc + j)]));
  }
}

TEST(SmallGemm, EveryWidthAndOperandForm) {
  for (int64_t n = 1; n <= kSmallGemmMax; ++n)
    for (int64_t k : {int64_t(1), int64_t(5), int64_t(16), kSmallGemmMax})
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          expect_products<float>(7, n, k, ta, tb, 1.0f, 0.0f, 1e-5);
          expect_products<double>(7, n, k, ta, tb, 1.0, 0.0, 1e-12);
        }
}

TEST(SmallGemm, AttentionsAlphaAndBetaForms) {
  for (auto [alpha, beta] : {std::pair{0.25, 0.0}, std::pair{1.0, 1.0}, std::pair{0.25, 1.0}, std::pair{2.0, 0.5}}) {
    expect_products<float>(40, 16, 16, false, true, float(alpha), float(beta), 1e-5);   // Q K^T
    expect_products<float>(16, 16, 32, true, false, float(alpha), float(beta), 1e-5);  // P^T dO
    expect_products<double>(3, 24, 9, true, true, alpha, beta, 1e-12);
  }
}

TEST(SmallGemm, RowBitsDoNotDependOnTheRowsBesideThem) {
  const Problem<float> p = problem<float>(37, 20, 29, false, true, 5);
  std::vector<float> all(size_t(37 * 20)), one(20);
  small_gemm<float>(p.a, p.b, 37, 20, 29, 0.5f, p.av.data(), p.bv.data(), 0.0f, all.data(), 20);
  for (int64_t i : {0, 13, 36}) {
    small_gemm<float>(p.a, p.b, 1, 20, 29, 0.5f, p.av.data() + i * p.a.ld, p.bv.data(), 0.0f, one.data(), 20);
    for (int64_t j = 0; j < 20; ++j) EXPECT_EQ(one[size_t(j)], all[size_t(i * 20 + j)]) << "row " << i;
  }
}

}  // namespace
}  // namespace moh::cpu
