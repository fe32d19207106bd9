// Beta schedules and the derived float64 tables (see noise_schedule.h).
#include "models/dit/noise_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace moh {
namespace {

// numpy.linspace(start, stop, n): start + i * step, the last value exactly stop.
std::vector<double> linspace(double start, double stop, int64_t n) {
  std::vector<double> values(static_cast<size_t>(n));
  const double step = n > 1 ? (stop - start) / double(n - 1) : 0.0;
  for (int64_t i = 0; i < n; ++i) values[size_t(i)] = start + double(i) * step;
  if (n > 1) values.back() = stop;
  return values;
}

double cosine_alpha_bar(double s) {
  const double c = std::cos((s + 0.008) / 1.008 * std::numbers::pi / 2);
  return c * c;
}

}  // namespace

BetaSchedule parse_beta_schedule(const std::string& name) {
  if (name == "linear") return BetaSchedule::Linear;
  if (name == "cosine") return BetaSchedule::Cosine;
  MOH_FAIL("diffusion: unknown beta schedule '", name, "' (expected 'linear' or 'cosine')");
}

std::string beta_schedule_name(BetaSchedule schedule) {
  return schedule == BetaSchedule::Linear ? "linear" : "cosine";
}

std::vector<double> make_betas(BetaSchedule schedule, int64_t steps) {
  MOH_CHECK(steps >= 2, "diffusion: the number of diffusion steps must be >= 2, got ", steps);
  if (schedule == BetaSchedule::Cosine) return betas_for_alpha_bar(steps, cosine_alpha_bar);
  // DiT's scaling reaches beta 1 (alpha_bar 0: no signal, infinite posterior terms) at 20 steps.
  MOH_CHECK(steps > 20, "diffusion: the linear schedule (betas 1e-4..0.02 scaled by 1000 / steps) reaches beta ",
            1000.0 / double(steps) * 0.02, " >= 1 at ", steps, " steps; use more than 20 steps or the cosine schedule");
  const double scale = 1000.0 / double(steps);
  return linspace(scale * 0.0001, scale * 0.02, steps);
}

std::vector<double> betas_for_alpha_bar(int64_t steps, const std::function<double(double)>& alpha_bar,
                                        double max_beta) {
  std::vector<double> betas(static_cast<size_t>(steps));
  for (int64_t i = 0; i < steps; ++i) {
    const double t1 = double(i) / double(steps), t2 = double(i + 1) / double(steps);
    betas[size_t(i)] = std::min(1.0 - alpha_bar(t2) / alpha_bar(t1), max_beta);
  }
  return betas;
}

DiffusionTables::DiffusionTables(std::vector<double> betas_in) : betas(std::move(betas_in)) {
  const size_t n = betas.size();
  MOH_CHECK(n >= 2, "diffusion: a process needs at least 2 steps, got ", n);
  for (size_t t = 0; t < n; ++t)
    MOH_CHECK(betas[t] > 0 && betas[t] <= 1, "diffusion: beta ", t, " is ", betas[t], ", expected a value in (0, 1]");
  const auto table = [n] { return std::vector<double>(n); };
  log_betas = alphas_cumprod = alphas_cumprod_prev = sqrt_alphas_cumprod = table();
  sqrt_one_minus_alphas_cumprod = log_one_minus_alphas_cumprod = sqrt_recip_alphas_cumprod = table();
  sqrt_recipm1_alphas_cumprod = posterior_variance = posterior_log_variance_clipped = table();
  posterior_mean_coef1 = posterior_mean_coef2 = table();
  double cumprod = 1.0;
  for (size_t t = 0; t < n; ++t) {
    const double beta = betas[t], alpha = 1.0 - beta;
    alphas_cumprod_prev[t] = cumprod;
    cumprod *= alpha;
    const double ac = cumprod, ac_prev = alphas_cumprod_prev[t];
    alphas_cumprod[t] = ac;
    log_betas[t] = std::log(beta);
    sqrt_alphas_cumprod[t] = std::sqrt(ac);
    sqrt_one_minus_alphas_cumprod[t] = std::sqrt(1.0 - ac);
    log_one_minus_alphas_cumprod[t] = std::log(1.0 - ac);
    sqrt_recip_alphas_cumprod[t] = std::sqrt(1.0 / ac);
    sqrt_recipm1_alphas_cumprod[t] = std::sqrt(1.0 / ac - 1.0);
    posterior_variance[t] = beta * (1.0 - ac_prev) / (1.0 - ac);
    posterior_mean_coef1[t] = beta * std::sqrt(ac_prev) / (1.0 - ac);
    posterior_mean_coef2[t] = (1.0 - ac_prev) * std::sqrt(alpha) / (1.0 - ac);
  }
  // The posterior variance is 0 at t = 0; its log takes step 1's value there.
  for (size_t t = 0; t < n; ++t) posterior_log_variance_clipped[t] = std::log(posterior_variance[t == 0 ? 1 : t]);
}

}  // namespace moh
