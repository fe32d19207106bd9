// Eigendecomposition of a dense real symmetric matrix in float64, written here because the linked
// OpenBLAS carries no LAPACK (cmake/openblas_static.cmake). Householder reduction to tridiagonal form,
// then the implicit QL method with Wilkinson shifts; O(n^3), single-threaded: about 1 s at n = 1000,
// 9 s at n = 2048. It sits beside its user (trainers/frechet_distance.h), not in core/math, which holds
// the per-element math the backends share.
// Matrices are n*n row-major std::vector<double>. The input is symmetrised ((A + A^T) / 2) first, so the
// rounding asymmetry of a computed product such as R S R is harmless; it must be finite. Eigenvalues
// come out ascending (as numpy.linalg.eigh); column j of `vectors` is a unit eigenvector of values[j]
// and the columns are orthonormal to rounding. Errors are moh::Error naming the function.
#pragma once

#include <cstdint>
#include <vector>

namespace moh {

struct SymmetricEigen {
  std::vector<double> values;   // n, ascending
  std::vector<double> vectors;  // n*n row-major: vectors[r * n + j] is row r of eigenvector j
};

SymmetricEigen symmetric_eigen(const std::vector<double>& a, int64_t n);
// The eigenvalues alone (ascending): no eigenvector accumulation, O(n^3) with a third of the work.
std::vector<double> symmetric_eigenvalues(const std::vector<double>& a, int64_t n);

}  // namespace moh
