// Symmetric eigensolver: Householder tridiagonalisation, implicit QL with Wilkinson shifts.
// The matrix is first divided by its largest |entry| (eigenvalues are multiplied back at the end), so no
// intermediate overflows or underflows. Eigenvectors are accumulated transposed (row j of `basis` is
// eigenvector j) so that every Givens rotation of the QL sweeps updates two contiguous rows.
#include "trainers/symmetric_eigen.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"

namespace moh {
namespace {

constexpr int kMaxQlIterationsPerEigenvalue = 64;

// A symmetric tridiagonal matrix: diagonal[i], and off[i] = T[i][i + 1] (off[n - 1] is 0, a sentinel).
struct Tridiagonal {
  std::vector<double> diagonal;
  std::vector<double> off;
};

// (A + A^T) / 2 divided by `scale` = max |A_ij| (1 for the zero matrix); checks size and finiteness.
std::vector<double> symmetrised_and_scaled(const std::vector<double>& a, int64_t n, const char* op, double& scale) {
  MOH_CHECK(n >= 0 && int64_t(a.size()) == n * n, op, ": expected a ", n, " x ", n, " matrix (", n * n,
            " values), got ", a.size(), " values");
  scale = 0;
  for (int64_t i = 0; i < n * n; ++i) {
    MOH_CHECK(std::isfinite(a[i]), op, ": entry (", i / n, ", ", i % n, ") is ", a[i]);
    scale = std::max(scale, std::abs(a[i]));
  }
  if (scale == 0) scale = 1;
  std::vector<double> s(a.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) s[i * n + j] = 0.5 * (a[i * n + j] + a[j * n + i]) / scale;
  return s;
}

// Reduces the symmetric m to T = Q^T m Q, Q = H_0 H_1 ... H_{n-3}, where H_k = I - beta_k v_k v_k^T acts on
// indices k+1..n-1 and zeroes column k below the subdiagonal. v_k is left in row k of m (columns k+1..n-1,
// a row no later step reads) and beta_k in betas[k] (0: column k was already zero, H_k = I).
Tridiagonal householder_tridiagonalise(std::vector<double>& m, int64_t n, std::vector<double>& betas) {
  Tridiagonal t{std::vector<double>(size_t(n)), std::vector<double>(size_t(n), 0.0)};
  betas.assign(size_t(n), 0.0);
  std::vector<double> w(static_cast<size_t>(n));
  for (int64_t k = 0; k + 2 < n; ++k) {
    double* v = &m[k * n];  // by symmetry, row k right of the diagonal is column k below it
    t.diagonal[k] = v[k];
    double norm2 = 0;
    for (int64_t j = k + 1; j < n; ++j) norm2 += v[j] * v[j];
    if (norm2 == 0) continue;
    const double x1 = v[k + 1];
    const double alpha = -std::copysign(std::sqrt(norm2), x1);  // H x = alpha e_1, no cancellation in x1 - alpha
    t.off[k] = alpha;
    v[k + 1] = x1 - alpha;  // v = x - alpha e_1, |v|^2 = 2 (|x|^2 - alpha x1) > 0
    const double beta = 1 / (norm2 - alpha * x1);
    betas[k] = beta;
    // On the trailing block, H A H = A - v w^T - w v^T with w = p - (beta / 2)(v^T p) v, p = beta A v
    // (w holds p first).
    for (int64_t i = k + 1; i < n; ++i) {
      const double* row = &m[i * n];
      double dot = 0;
      for (int64_t j = k + 1; j < n; ++j) dot += row[j] * v[j];
      w[i] = beta * dot;
    }
    double vp = 0;
    for (int64_t j = k + 1; j < n; ++j) vp += v[j] * w[j];
    const double half_beta_vp = 0.5 * beta * vp;
    for (int64_t j = k + 1; j < n; ++j) w[j] -= half_beta_vp * v[j];
    for (int64_t i = k + 1; i < n; ++i) {
      double* row = &m[i * n];
      const double vi = v[i], wi = w[i];
      for (int64_t j = k + 1; j < n; ++j) row[j] -= vi * w[j] + wi * v[j];
    }
  }
  if (n >= 2) t.off[n - 2] = m[(n - 2) * n + n - 1];
  for (int64_t k = std::max<int64_t>(n - 2, 0); k < n; ++k) t.diagonal[k] = m[k * n + k];
  return t;
}

// Q^T from the reflectors householder_tridiagonalise left in m: Q is built as H_k Q for k descending (each
// step touches only rows and columns k+1..n-1, the rest is still the identity), then transposed.
std::vector<double> reflector_basis_transposed(const std::vector<double>& m, int64_t n,
                                               const std::vector<double>& betas) {
  std::vector<double> q(size_t(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) q[i * n + i] = 1;
  std::vector<double> vq(static_cast<size_t>(n));
  for (int64_t k = n - 3; k >= 0; --k) {
    if (betas[k] == 0) continue;
    const double* v = &m[k * n];
    std::fill(vq.begin() + k + 1, vq.end(), 0.0);  // vq = beta v^T Q, over columns k+1..n-1
    for (int64_t i = k + 1; i < n; ++i)
      for (int64_t j = k + 1; j < n; ++j) vq[j] += v[i] * q[i * n + j];
    for (int64_t j = k + 1; j < n; ++j) vq[j] *= betas[k];
    for (int64_t i = k + 1; i < n; ++i)
      for (int64_t j = k + 1; j < n; ++j) q[i * n + j] -= v[i] * vq[j];
  }
  std::vector<double> qt(q.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) qt[j * n + i] = q[i * n + j];
  return qt;
}

// Rows a and b of the n-column `basis` become (c a - s b, s a + c b): a Givens rotation of columns a, b of
// the eigenvector matrix.
void rotate_rows(std::vector<double>& basis, int64_t n, int64_t a, int64_t b, double c, double s) {
  double* ra = &basis[a * n];
  double* rb = &basis[b * n];
  for (int64_t k = 0; k < n; ++k) {
    const double x = ra[k], y = rb[k];
    ra[k] = c * x - s * y;
    rb[k] = s * x + c * y;
  }
}

// Diagonalises t in place by implicit QL sweeps with a Wilkinson shift from the leading 2x2 of each
// unreduced block; an off-diagonal entry counts as zero below eps * max(|d_m| + |d_m+1|, |T|). When `basis`
// is given (n x n, rows = current eigenvectors), every rotation is applied to it.
void implicit_ql(Tridiagonal& t, int64_t n, std::vector<double>* basis) {
  std::vector<double>& d = t.diagonal;
  std::vector<double>& e = t.off;
  constexpr double eps = std::numeric_limits<double>::epsilon();
  // Below eps * |T| an off-diagonal entry is rounding noise however small its neighbours: without this
  // floor, entries between (near-)zero diagonal entries (a singular matrix) never count as converged.
  double norm = 0;
  for (int64_t i = 0; i < n; ++i)
    norm = std::max(norm, std::abs(d[i]) + std::abs(e[i]) + (i > 0 ? std::abs(e[i - 1]) : 0.0));
  const double floor = eps * norm;
  for (int64_t l = 0; l < n; ++l) {
    for (int iteration = 0;; ++iteration) {
      int64_t m = l;  // the unreduced block is l..m
      while (m + 1 < n && std::abs(e[m]) > std::max(floor, eps * (std::abs(d[m]) + std::abs(d[m + 1])))) ++m;
      if (m == l) break;
      MOH_CHECK(iteration < kMaxQlIterationsPerEigenvalue, "symmetric_eigen: QL iteration did not converge for "
                "eigenvalue ", l, " after ", kMaxQlIterationsPerEigenvalue, " sweeps");
      double g = (d[l + 1] - d[l]) / (2 * e[l]);
      double r = std::hypot(g, 1.0);
      g = d[m] - d[l] + e[l] / (g + std::copysign(r, g));  // d[m] minus the shift
      double s = 1, c = 1, p = 0;
      bool split = false;  // a rotation found an exact zero: the block splits, start over
      for (int64_t i = m - 1; i >= l; --i) {
        const double f = s * e[i], b = c * e[i];
        r = std::hypot(f, g);
        e[i + 1] = r;
        if (r == 0) {
          d[i + 1] -= p;
          e[m] = 0;
          split = true;
          break;
        }
        s = f / r;
        c = g / r;
        g = d[i + 1] - p;
        r = (d[i] - g) * s + 2 * c * b;
        p = s * r;
        d[i + 1] = g + p;
        g = c * r - b;
        if (basis) rotate_rows(*basis, n, i, i + 1, c, s);
      }
      if (split) continue;
      d[l] -= p;
      e[l] = g;
      e[m] = 0;
    }
  }
}

// Indices of `values` in ascending order of value.
std::vector<int64_t> ascending_order(const std::vector<double>& values) {
  std::vector<int64_t> order(values.size());
  std::iota(order.begin(), order.end(), int64_t(0));
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return values[a] < values[b]; });
  return order;
}

}  // namespace

SymmetricEigen symmetric_eigen(const std::vector<double>& a, int64_t n) {
  double scale = 1;
  std::vector<double> m = symmetrised_and_scaled(a, n, "symmetric_eigen", scale);
  std::vector<double> betas;
  Tridiagonal t = householder_tridiagonalise(m, n, betas);
  std::vector<double> basis = reflector_basis_transposed(m, n, betas);
  implicit_ql(t, n, &basis);
  SymmetricEigen out{std::vector<double>(size_t(n)), std::vector<double>(size_t(n * n))};
  const std::vector<int64_t> order = ascending_order(t.diagonal);
  for (int64_t j = 0; j < n; ++j) {
    out.values[j] = t.diagonal[order[j]] * scale;
    for (int64_t r = 0; r < n; ++r) out.vectors[r * n + j] = basis[order[j] * n + r];
  }
  return out;
}

std::vector<double> symmetric_eigenvalues(const std::vector<double>& a, int64_t n) {
  double scale = 1;
  std::vector<double> m = symmetrised_and_scaled(a, n, "symmetric_eigenvalues", scale);
  std::vector<double> betas;
  Tridiagonal t = householder_tridiagonalise(m, n, betas);
  implicit_ql(t, n, nullptr);
  std::vector<double> values = t.diagonal;
  std::sort(values.begin(), values.end());
  for (double& v : values) v *= scale;
  return values;
}

}  // namespace moh
