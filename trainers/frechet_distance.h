// The Fréchet distance between two Gaussians N(mu_a, S_a), N(mu_b, S_b) (FID when the statistics are
// those of classifier features of two image sets):
//   |mu_a - mu_b|^2 + tr S_a + tr S_b - 2 tr sqrt(S_a S_b),
// with tr sqrt(S_a S_b) = sum_i sqrt(max(0, lambda_i(R S_b R))), R = S_a^(1/2) the symmetric PSD square
// root (eigenvalues of S_a below 0, rounding of a singular covariance, clamped to 0). All float64, with
// the eigensolver of trainers/symmetric_eigen.h; O(d^3). Accuracy: about 1e-12 relative for full-rank
// covariances; where one is singular (fewer samples than dimensions), its zero eigenvalues come out as
// rounding noise of size eps |S| whose square roots add up to ~ d sqrt(eps |S|). The result is not
// clamped at 0: for nearly equal statistics it may come out a rounding error below it.
#pragma once

#include "trainers/feature_statistics.h"

namespace moh {

// Throws moh::Error when the dimensions differ (naming both) or a stats object is inconsistent.
double frechet_distance(const FeatureStats& a, const FeatureStats& b);

}  // namespace moh
