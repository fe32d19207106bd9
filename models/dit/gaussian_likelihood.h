// Differentiable Gaussian divergences and likelihoods of the diffusion variational bound
// (improved-diffusion's losses.py), on autograd Variables that broadcast together, in nats:
// the KL divergence of two diagonal Gaussians, the tanh approximation of the standard normal CDF
// and the log-likelihood of data in [-1, 1] (8-bit values rescaled) under a Gaussian discretised to
// bins of width 2 / 255, the two edge bins open-ended.
#pragma once

#include "autograd/variable.h"

namespace moh {

// KL(N(mean1, exp(logvar1)) || N(mean2, exp(logvar2))), elementwise.
ag::Variable normal_kl(const ag::Variable& mean1, const ag::Variable& logvar1, const ag::Variable& mean2,
                       const ag::Variable& logvar2);

// 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))).
ag::Variable approx_standard_normal_cdf(const ag::Variable& x);

// log P(bin of x) for x [...] in [-1, 1], the Gaussian N(means, exp(log_scales)^2) of x's shape:
// the bin [x - 1/255, x + 1/255], (-inf, x + 1/255] where x < -0.999, [x - 1/255, inf) where
// x > 0.999; probabilities are floored at 1e-12 before the log.
ag::Variable discretized_gaussian_log_likelihood(const Tensor& x, const ag::Variable& means,
                                                 const ag::Variable& log_scales);

}  // namespace moh
