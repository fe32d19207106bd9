// Small dense float64 matrices for the eigensolver, feature-statistics and Fréchet-distance suites:
// seeded random matrices, a naive product, a transpose and the largest |difference| of two matrices.
// Row-major std::vector<double>, sizes given beside them; deliberately plain loops (an independent
// route from the BLAS products the library uses).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace moh::dense_test {

using Matrix = std::vector<double>;

// rows x cols entries uniform in [-1, 1), reproducible for a seed.
inline Matrix random_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Matrix m(static_cast<size_t>(rows * cols));
  for (double& v : m) v = uniform(rng);
  return m;
}

// a [n, k] @ b [k, m].
inline Matrix product(const Matrix& a, const Matrix& b, int64_t n, int64_t k, int64_t m) {
  Matrix c(static_cast<size_t>(n * m), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t l = 0; l < k; ++l)
      for (int64_t j = 0; j < m; ++j) c[i * m + j] += a[i * k + l] * b[l * m + j];
  return c;
}

inline Matrix transpose(const Matrix& a, int64_t rows, int64_t cols) {
  Matrix t(a.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = a[i * cols + j];
  return t;
}

// X X^T / k + ridge I for a random X [n, k]: symmetric PSD, of rank min(n, k) when ridge is 0.
inline Matrix random_covariance(int64_t n, int64_t k, double ridge, uint64_t seed) {
  const Matrix x = random_matrix(n, k, seed);
  Matrix s = product(x, transpose(x, n, k), n, k, n);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) s[i * n + j] = s[i * n + j] / double(k) + (i == j ? ridge : 0.0);
  return s;
}

inline double max_abs_difference(const Matrix& a, const Matrix& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

}  // namespace moh::dense_test
