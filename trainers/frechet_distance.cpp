// Fréchet distance of two Gaussians. With S_a = V diag(l) V^T and C = V diag(sqrt(max(0, l))), R = C V^T
// and R S_b R = V (C^T S_b C) V^T: C^T S_b C has the same eigenvalues, at two matrix products instead of
// three. The products go through matmul (BLAS dgemm) on float64 tensors.
#include "trainers/frechet_distance.h"

#include <algorithm>
#include <cmath>

#include "core/factory.h"
#include "core/ops.h"
#include "trainers/symmetric_eigen.h"

namespace moh {
namespace {

void check_consistent(const FeatureStats& s, const char* which) {
  const int64_t d = s.dim();
  MOH_CHECK(d >= 1 && int64_t(s.sigma.size()) == d * d, "frechet_distance: statistics ", which, " have ", d,
            " means and ", s.sigma.size(), " covariance values, expected d >= 1 and d*d");
}

double trace(const std::vector<double>& m, int64_t d) {
  double sum = 0;
  for (int64_t i = 0; i < d; ++i) sum += m[i * d + i];
  return sum;
}

// tr sqrt(S_a S_b) for symmetric PSD S_a, S_b (d x d).
double trace_sqrt_product(const std::vector<double>& sigma_a, const std::vector<double>& sigma_b, int64_t d) {
  SymmetricEigen eigen_a = symmetric_eigen(sigma_a, d);
  std::vector<double>& c = eigen_a.vectors;  // becomes C = V diag(sqrt(max(0, l)))
  for (int64_t j = 0; j < d; ++j) {
    const double root = std::sqrt(std::max(0.0, eigen_a.values[j]));
    for (int64_t r = 0; r < d; ++r) c[r * d + j] *= root;
  }
  const Tensor ct = from_vector<double>(c, {d, d});
  const Tensor sb = from_vector<double>(sigma_b, {d, d});
  const Tensor inner = matmul(matmul(ct.t(), sb), ct);
  double sum = 0;
  for (double lambda : symmetric_eigenvalues(inner.to_vector<double>(), d)) sum += std::sqrt(std::max(0.0, lambda));
  return sum;
}

}  // namespace

double frechet_distance(const FeatureStats& a, const FeatureStats& b) {
  check_consistent(a, "a");
  check_consistent(b, "b");
  MOH_CHECK(a.dim() == b.dim(), "frechet_distance: feature dimensions differ: ", a.dim(), " (a) and ", b.dim(),
            " (b)");
  const int64_t d = a.dim();
  double mean_term = 0;
  for (int64_t i = 0; i < d; ++i) mean_term += (a.mu[i] - b.mu[i]) * (a.mu[i] - b.mu[i]);
  return mean_term + trace(a.sigma, d) + trace(b.sigma, d) - 2 * trace_sqrt_product(a.sigma, b.sigma, d);
}

}  // namespace moh
