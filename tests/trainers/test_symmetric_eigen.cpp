// The symmetric eigensolver: A v = lambda v and V^T V = I on random matrices (n = 1 to 256), known 2x2
// and 3x3 spectra, ascending order, repeated and zero eigenvalues, extreme scales, the symmetrisation
// of a slightly asymmetric input, the eigenvalue-only variant agreeing with the full one, and the errors.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/test_util.h"
#include "tests/trainers/dense_matrix_test_util.h"
#include "trainers/symmetric_eigen.h"

namespace moh {
namespace {

using dense_test::Matrix;
using dense_test::max_abs_difference;
using dense_test::product;
using dense_test::transpose;

Matrix random_symmetric(int64_t n, uint64_t seed) {
  const Matrix a = dense_test::random_matrix(n, n, seed);
  Matrix s(a.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) s[i * n + j] = a[i * n + j] + a[j * n + i];
  return s;
}

// Residual |A V - V diag(values)| and |V^T V - I| below tol (relative to the largest |eigenvalue|),
// values ascending.
void expect_decomposes(const Matrix& a, int64_t n, double tol) {
  const SymmetricEigen e = symmetric_eigen(a, n);
  ASSERT_EQ(int64_t(e.values.size()), n);
  ASSERT_EQ(int64_t(e.vectors.size()), n * n);
  EXPECT_TRUE(std::is_sorted(e.values.begin(), e.values.end()));
  const double scale = std::max({1e-300, std::abs(e.values.front()), std::abs(e.values.back())});
  const Matrix av = product(a, e.vectors, n, n, n);
  Matrix v_lambda = e.vectors;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < n; ++j) v_lambda[r * n + j] *= e.values[j];
  EXPECT_LE(max_abs_difference(av, v_lambda), tol * scale) << "A v = lambda v, n = " << n;
  Matrix identity(size_t(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) identity[i * n + i] = 1;
  EXPECT_LE(max_abs_difference(product(transpose(e.vectors, n, n), e.vectors, n, n, n), identity), tol)
      << "V^T V = I, n = " << n;
  EXPECT_LE(max_abs_difference(symmetric_eigenvalues(a, n), e.values), tol * scale) << "eigenvalues alone, n = " << n;
}

TEST(SymmetricEigen, DecomposesRandomSymmetricMatrices) {
  for (int64_t n : {1, 2, 3, 5, 17, 64}) expect_decomposes(random_symmetric(n, 100 + n), n, 1e-12);
}

TEST(SymmetricEigen, DecomposesALargerMatrix) {
  expect_decomposes(random_symmetric(256, 7), 256, 1e-11);
}

TEST(SymmetricEigen, KnownTwoByTwo) {
  const SymmetricEigen e = symmetric_eigen({2, 1, 1, 2}, 2);
  EXPECT_NEAR(e.values[0], 1, 1e-15);
  EXPECT_NEAR(e.values[1], 3, 1e-15);
  const double h = std::sqrt(0.5);  // eigenvectors (1, -1) / sqrt 2 and (1, 1) / sqrt 2, up to sign
  EXPECT_NEAR(std::abs(e.vectors[0 * 2 + 0]), h, 1e-15);
  EXPECT_NEAR(e.vectors[0 * 2 + 0], -e.vectors[1 * 2 + 0], 1e-15);
  EXPECT_NEAR(std::abs(e.vectors[0 * 2 + 1]), h, 1e-15);
  EXPECT_NEAR(e.vectors[0 * 2 + 1], e.vectors[1 * 2 + 1], 1e-15);
}

TEST(SymmetricEigen, KnownThreeByThree) {
  // The second-difference matrix: eigenvalues 2 - sqrt 2, 2, 2 + sqrt 2; eigenvector of 2 is (1, 0, -1) / sqrt 2.
  const Matrix a = {2, -1, 0, -1, 2, -1, 0, -1, 2};
  const SymmetricEigen e = symmetric_eigen(a, 3);
  EXPECT_NEAR(e.values[0], 2 - std::sqrt(2.0), 1e-14);
  EXPECT_NEAR(e.values[1], 2, 1e-14);
  EXPECT_NEAR(e.values[2], 2 + std::sqrt(2.0), 1e-14);
  EXPECT_NEAR(std::abs(e.vectors[0 * 3 + 1]), std::sqrt(0.5), 1e-14);
  EXPECT_NEAR(e.vectors[1 * 3 + 1], 0, 1e-14);
  EXPECT_NEAR(e.vectors[2 * 3 + 1], -e.vectors[0 * 3 + 1], 1e-14);
  expect_decomposes(a, 3, 1e-14);
}

TEST(SymmetricEigen, SortsADiagonalMatrixAndKeepsItsBasis) {
  const SymmetricEigen e = symmetric_eigen({3, 0, 0, 0, -1, 0, 0, 0, 2}, 3);
  EXPECT_EQ(e.values, (std::vector<double>{-1, 2, 3}));
  // Column j is the unit vector of the diagonal entry values[j] came from: -1 is entry 1, 2 entry 2, 3 entry 0.
  EXPECT_EQ(std::abs(e.vectors[1 * 3 + 0]), 1.0);
  EXPECT_EQ(std::abs(e.vectors[2 * 3 + 1]), 1.0);
  EXPECT_EQ(std::abs(e.vectors[0 * 3 + 2]), 1.0);
}

TEST(SymmetricEigen, RepeatedEigenvaluesKeepAnOrthonormalBasis) {
  // Q diag(1, 1, 2, 2, 2, 5) Q^T with Q orthogonal (the eigenvectors of a random symmetric matrix).
  const int64_t n = 6;
  const Matrix q = symmetric_eigen(random_symmetric(n, 3), n).vectors;
  const std::vector<double> spectrum = {1, 1, 2, 2, 2, 5};
  Matrix q_lambda = q;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < n; ++j) q_lambda[r * n + j] *= spectrum[j];
  const Matrix a = product(q_lambda, transpose(q, n, n), n, n, n);
  expect_decomposes(a, n, 1e-13);
  EXPECT_LE(max_abs_difference(symmetric_eigen(a, n).values, spectrum), 1e-13);
  expect_decomposes(Matrix(size_t(n * n), 0.0), n, 0);  // the zero matrix: values 0, V = I
}

TEST(SymmetricEigen, RankDeficientCovarianceHasZeroEigenvalues) {
  const int64_t n = 20, rank = 5;
  const Matrix s = dense_test::random_covariance(n, rank, 0.0, 11);
  const SymmetricEigen e = symmetric_eigen(s, n);
  for (int64_t j = 0; j < n - rank; ++j) EXPECT_LE(std::abs(e.values[j]), 1e-14) << j;
  for (int64_t j = n - rank; j < n; ++j) EXPECT_GT(e.values[j], 1e-3) << j;
  expect_decomposes(s, n, 1e-13);
}

// The inner matrix of the Frechet distance of two singular covariances (fewer features than dimensions):
// C^T S_b C with C = V diag(sqrt(max(0, lambda))) of a rank-d/2 S_a. Its zero rows and columns leave
// rounding-sized off-diagonal entries between zero diagonal entries, which a purely relative convergence
// test never accepts (the QL iteration then gave up).
TEST(SymmetricEigen, ConvergesOnTheFrechetInnerMatrixOfSingularCovariances) {
  const int64_t n = 64;
  auto low_rank_psd = [&](int64_t rank, uint64_t seed) {
    const Matrix x = dense_test::random_matrix(n, rank, seed);
    return product(x, transpose(x, n, rank), n, rank, n);
  };
  const Matrix s_a = low_rank_psd(n / 2, 21), s_b = low_rank_psd(n / 2, 22);
  const SymmetricEigen e = symmetric_eigen(s_a, n);
  Matrix c = e.vectors;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < n; ++j) c[r * n + j] *= std::sqrt(std::max(0.0, e.values[j]));
  const Matrix inner = product(transpose(c, n, n), product(s_b, c, n, n, n), n, n, n);
  expect_decomposes(inner, n, 1e-10);
}

TEST(SymmetricEigen, ExtremeScalesNeitherOverflowNorUnderflow) {
  const int64_t n = 8;
  const Matrix a = random_symmetric(n, 5);
  const std::vector<double> reference = symmetric_eigenvalues(a, n);
  for (double scale : {1e-300, 1e300}) {
    Matrix scaled = a;
    for (double& v : scaled) v *= scale;
    const std::vector<double> values = symmetric_eigenvalues(scaled, n);
    for (int64_t j = 0; j < n; ++j) EXPECT_NEAR(values[j] / scale, reference[j], 1e-12) << scale << " " << j;
    expect_decomposes(scaled, n, 1e-12);
  }
}

TEST(SymmetricEigen, SymmetrisesItsInput) {
  // [[1, 2], [0, 1]] is read as [[1, 1], [1, 1]]: eigenvalues 0 and 2.
  const std::vector<double> values = symmetric_eigenvalues({1, 2, 0, 1}, 2);
  EXPECT_NEAR(values[0], 0, 1e-15);
  EXPECT_NEAR(values[1], 2, 1e-15);
}

TEST(SymmetricEigen, EmptyMatrixHasNoEigenvalues) {
  const SymmetricEigen e = symmetric_eigen({}, 0);
  EXPECT_TRUE(e.values.empty());
  EXPECT_TRUE(e.vectors.empty());
}

TEST(SymmetricEigen, RejectsAWrongSizeAndNonFiniteEntries) {
  test::expect_error([] { symmetric_eigen({1, 2, 3}, 2); }, {"symmetric_eigen", "2 x 2", "got 3 values"});
  test::expect_error([] { symmetric_eigenvalues({1, 0, 0, NAN}, 2); },
                     {"symmetric_eigenvalues", "entry (1, 1)", "nan"});
  test::expect_error([] { symmetric_eigen({1, INFINITY, 0, 1}, 2); }, {"symmetric_eigen", "entry (0, 1)", "inf"});
}

}  // namespace
}  // namespace moh
