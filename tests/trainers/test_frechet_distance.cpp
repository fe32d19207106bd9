// The Fréchet distance of two Gaussians: zero for identical statistics (full rank and singular), the
// closed form of diagonal covariances, a non-commuting 2x2 pair against tr sqrt(AB) = sqrt(tr AB + 2
// sqrt(det AB)), random statistics against a Newton-Schulz square root of S_a S_b computed here, the
// symmetry FD(a, b) = FD(b, a) when one covariance is singular, a zero covariance, and the errors.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/test_util.h"
#include "tests/trainers/dense_matrix_test_util.h"
#include "trainers/frechet_distance.h"

namespace moh {
namespace {

using dense_test::Matrix;
using dense_test::product;

FeatureStats random_stats(int64_t d, int64_t rank, double ridge, uint64_t seed) {
  Matrix mu = dense_test::random_matrix(1, d, seed);
  return FeatureStats{1000, mu, dense_test::random_covariance(d, rank, ridge, seed + 1)};
}

double trace(const Matrix& m, int64_t d) {
  double sum = 0;
  for (int64_t i = 0; i < d; ++i) sum += m[i * d + i];
  return sum;
}

double squared_distance(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += (a[i] - b[i]) * (a[i] - b[i]);
  return sum;
}

// tr sqrt(M) for M = S_a S_b (positive eigenvalues, not symmetric) by the coupled Newton-Schulz iteration
// Y -> Y T, Z -> T Z, T = (3I - Z Y) / 2 on M / |M|_F, whose Y converges to sqrt(M / |M|_F).
double newton_schulz_trace_sqrt(const Matrix& m, int64_t d) {
  double norm = 0;
  for (double v : m) norm += v * v;
  norm = std::sqrt(norm);
  Matrix y = m, z(m.size(), 0.0);
  for (double& v : y) v /= norm;
  for (int64_t i = 0; i < d; ++i) z[i * d + i] = 1;
  for (int iteration = 0; iteration < 200; ++iteration) {
    Matrix t = product(z, y, d, d, d);
    for (int64_t i = 0; i < d; ++i)
      for (int64_t j = 0; j < d; ++j) t[i * d + j] = ((i == j ? 3.0 : 0.0) - t[i * d + j]) / 2;
    Matrix next_y = product(y, t, d, d, d);
    z = product(t, z, d, d, d);
    const double change = dense_test::max_abs_difference(next_y, y);
    y = std::move(next_y);
    if (change < 1e-15) break;
  }
  return std::sqrt(norm) * trace(y, d);
}

// A singular covariance has eigenvalues that are rounding noise around 0, of size eps |S|, and the square
// root lifts each to sqrt(eps |S|) ~ 1e-8 |S|^(1/2): that, not 1e-12, is the accuracy there.
constexpr double kSingularTolerance = 1e-6;

TEST(FrechetDistance, IdenticalStatisticsGiveZero) {
  const FeatureStats full = random_stats(40, 60, 0.0, 3);
  EXPECT_LE(std::abs(frechet_distance(full, full)), 1e-9 * trace(full.sigma, 40));
  const FeatureStats singular = random_stats(40, 15, 0.0, 3);  // fewer samples than dimensions
  EXPECT_LE(std::abs(frechet_distance(singular, singular)), kSingularTolerance * trace(singular.sigma, 40));
}

TEST(FrechetDistance, DiagonalCovariancesMatchTheClosedForm) {
  // sum (mu_a - mu_b)^2 + sum (sqrt a_i - sqrt b_i)^2
  const std::vector<double> var_a = {1, 4, 0.25, 9, 0}, var_b = {2, 1, 0.25, 16, 3};
  FeatureStats a{10, {0, 1, 2, 3, 4}, Matrix(25, 0.0)}, b{10, {1, 1, -1, 3, 4.5}, Matrix(25, 0.0)};
  double expected = squared_distance(a.mu, b.mu);
  for (int64_t i = 0; i < 5; ++i) {
    a.sigma[i * 5 + i] = var_a[i];
    b.sigma[i * 5 + i] = var_b[i];
    expected += std::pow(std::sqrt(var_a[i]) - std::sqrt(var_b[i]), 2);
  }
  EXPECT_NEAR(frechet_distance(a, b), expected, 1e-12 * expected);
}

TEST(FrechetDistance, NonCommutingTwoByTwoMatchesTheDeterminantFormula) {
  const Matrix sa = {2, 1, 1, 1}, sb = {1, -0.5, -0.5, 3};
  const Matrix ab = product(sa, sb, 2, 2, 2), ba = product(sb, sa, 2, 2, 2);
  ASSERT_GT(dense_test::max_abs_difference(ab, ba), 1);  // the pair does not commute
  const double det = ab[0] * ab[3] - ab[1] * ab[2];
  const double trace_sqrt = std::sqrt(trace(ab, 2) + 2 * std::sqrt(det));
  const FeatureStats a{5, {0.5, -1}, sa}, b{5, {1, 1}, sb};
  const double expected = squared_distance(a.mu, b.mu) + trace(sa, 2) + trace(sb, 2) - 2 * trace_sqrt;
  EXPECT_NEAR(frechet_distance(a, b), expected, 1e-12 * expected);
}

TEST(FrechetDistance, RandomStatisticsMatchANewtonSchulzSquareRoot) {
  const int64_t d = 12;
  for (uint64_t seed : {1, 2, 3}) {
    const FeatureStats a = random_stats(d, 30, 0.3, 10 * seed), b = random_stats(d, 20, 0.5, 10 * seed + 5);
    const double expected = squared_distance(a.mu, b.mu) + trace(a.sigma, d) + trace(b.sigma, d) -
                            2 * newton_schulz_trace_sqrt(product(a.sigma, b.sigma, d, d, d), d);
    EXPECT_NEAR(frechet_distance(a, b), expected, 1e-6) << "seed " << seed;
    EXPECT_GT(expected, 0.1);
  }
}

TEST(FrechetDistance, IsSymmetricWhenOneCovarianceIsSingular) {
  const FeatureStats a = random_stats(10, 3, 0.0, 21), b = random_stats(10, 25, 0.0, 31);
  const double ab = frechet_distance(a, b), ba = frechet_distance(b, a);
  EXPECT_NEAR(ab, ba, kSingularTolerance * ab);
  EXPECT_GT(ab, 0);
}

TEST(FrechetDistance, ZeroCovarianceLeavesTheMeanTermAndTheOtherTrace) {
  const FeatureStats b = random_stats(6, 10, 0.1, 41);
  const FeatureStats a{2, {1, 2, 3, 4, 5, 6}, Matrix(36, 0.0)};
  const double expected = squared_distance(a.mu, b.mu) + trace(b.sigma, 6);
  EXPECT_NEAR(frechet_distance(a, b), expected, 1e-12 * expected);
  EXPECT_NEAR(frechet_distance(b, a), expected, 1e-12 * expected);
}

TEST(FrechetDistance, RejectsMismatchedDimensionsAndInconsistentStatistics) {
  const FeatureStats three = random_stats(3, 5, 0.1, 1), four = random_stats(4, 5, 0.1, 2);
  test::expect_error([&] { frechet_distance(three, four); },
                     {"frechet_distance", "dimensions differ", "3 (a)", "4 (b)"});
  FeatureStats broken = three;
  broken.sigma.pop_back();
  test::expect_error([&] { frechet_distance(three, broken); }, {"frechet_distance", "statistics b", "8 covariance"});
}

}  // namespace
}  // namespace moh
