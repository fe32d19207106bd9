// normal_kl, approx_standard_normal_cdf, discretized_gaussian_log_likelihood (see gaussian_likelihood.h).
#include "models/dit/gaussian_likelihood.h"

#include <cmath>
#include <numbers>

#include "autograd/autograd.h"
#include "core/error.h"

namespace moh {

ag::Variable normal_kl(const ag::Variable& mean1, const ag::Variable& logvar1, const ag::Variable& mean2,
                       const ag::Variable& logvar2) {
  const ag::Variable diff = mean1 - mean2;
  return 0.5 * (logvar2 - logvar1 + ag::exp(logvar1 - logvar2) + diff * diff * ag::exp(-logvar2) - 1.0);
}

ag::Variable approx_standard_normal_cdf(const ag::Variable& x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * (ag::tanh((x + ag::pow(x, 3.0) * 0.044715) * k) + 1.0);
}

ag::Variable discretized_gaussian_log_likelihood(const Tensor& x, const ag::Variable& means,
                                                 const ag::Variable& log_scales) {
  MOH_CHECK(x.shape() == means.shape() && x.shape() == log_scales.shape(),
            "discretized_gaussian_log_likelihood: x ", describe(x), ", means ", means.describe(), " and log_scales ",
            log_scales.describe(), " must have one shape");
  const ag::Variable centered = ag::Variable(x) - means;
  const ag::Variable inv_stdv = ag::exp(-log_scales);
  const ag::Variable cdf_plus = approx_standard_normal_cdf(inv_stdv * (centered + 1.0 / 255.0));
  const ag::Variable cdf_min = approx_standard_normal_cdf(inv_stdv * (centered - 1.0 / 255.0));
  const auto floored_log = [](const ag::Variable& p) { return ag::log(ag::clamp(p, 1e-12, std::nullopt)); };
  const ag::Variable log_cdf_plus = floored_log(cdf_plus);
  const ag::Variable log_one_minus_cdf_min = floored_log(1.0 - cdf_min);
  const ag::Variable log_cdf_delta = floored_log(cdf_plus - cdf_min);
  return ag::where(lt(x, -0.999), log_cdf_plus, ag::where(gt(x, 0.999), log_one_minus_cdf_min, log_cdf_delta));
}

}  // namespace moh
