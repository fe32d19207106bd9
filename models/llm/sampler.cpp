// Sampler: temperature, top-k and top-p filtering, then an inverse-CDF draw (see sampler.h).
#include "models/llm/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace moh {
namespace {

int64_t argmax(const std::vector<double>& values) {
  return int64_t(std::max_element(values.begin(), values.end()) - values.begin());  // the first maximum
}

}  // namespace

void validate(const SamplerOptions& o) {
  MOH_CHECK(std::isfinite(o.temperature) && o.temperature >= 0, "sampler: temperature must be >= 0, got ",
            o.temperature);
  MOH_CHECK(o.top_k >= 0, "sampler: top_k must be >= 0 (0 keeps every token), got ", o.top_k);
  MOH_CHECK(o.top_p > 0 && o.top_p <= 1, "sampler: top_p must be in (0, 1], got ", o.top_p);
}

std::vector<double> sampling_distribution(const std::vector<double>& logits, const SamplerOptions& o) {
  MOH_CHECK(!logits.empty(), "sampler: no logits");
  for (size_t i = 0; i < logits.size(); ++i)
    MOH_CHECK(!std::isnan(logits[i]), "sampler: logit ", i, " is NaN (the model's output is not finite)");
  std::vector<double> probs(logits.size(), 0.0);
  if (o.temperature == 0 || o.top_k == 1) {
    probs[size_t(argmax(logits))] = 1.0;
    return probs;
  }
  // Token ids by descending logit, ties to the lower id; top-k keeps a prefix of them.
  std::vector<int64_t> order(logits.size());
  std::iota(order.begin(), order.end(), int64_t(0));
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
  size_t kept = o.top_k > 0 ? std::min(order.size(), size_t(o.top_k)) : order.size();
  // Softmax over the kept tokens at this temperature (max subtracted: the first is the largest).
  const double top = logits[size_t(order[0])] / o.temperature;
  double total = 0;
  for (size_t i = 0; i < kept; ++i) {
    const double p = std::exp(logits[size_t(order[i])] / o.temperature - top);
    probs[size_t(order[i])] = p;
    total += p;
  }
  // Nucleus: the smallest prefix whose mass reaches top_p (always at least one token).
  if (o.top_p < 1) {
    double mass = 0;
    size_t n = 0;
    while (n < kept && mass < o.top_p * total) mass += probs[size_t(order[n++])];
    for (size_t i = n; i < kept; ++i) probs[size_t(order[i])] = 0;
    kept = n;
    total = mass;
  }
  for (size_t i = 0; i < kept; ++i) probs[size_t(order[i])] /= total;
  return probs;
}

int64_t draw_token(const std::vector<double>& probs, double u) {
  double cumulative = 0;
  int64_t last_kept = -1;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] <= 0) continue;
    cumulative += probs[i];
    last_kept = int64_t(i);
    if (u < cumulative) return last_kept;
  }
  MOH_CHECK(last_kept >= 0, "sampler: every token has probability 0");
  return last_kept;
}

Sampler::Sampler(const SamplerOptions& options, uint64_t seed) : options_(options), gen_(seed) { validate(options); }

std::vector<int64_t> Sampler::sample(const Tensor& logits) {
  MOH_CHECK(logits.defined() && logits.dim() == 2 && logits.size(1) > 0, "sampler: expected logits [B, V], got ",
            logits.defined() ? describe(logits) : "undefined");
  const int64_t rows = logits.size(0), vocab = logits.size(1);
  const std::vector<double> all = logits.to_vector<double>();
  const std::vector<double> u = uniform({rows}, 0.0, 1.0, gen_, DType::Float64).to_vector<double>();
  std::vector<int64_t> tokens(static_cast<size_t>(rows));
  for (int64_t b = 0; b < rows; ++b) {
    const std::vector<double> row(all.begin() + b * vocab, all.begin() + (b + 1) * vocab);
    tokens[size_t(b)] = draw_token(sampling_distribution(row, options_), u[size_t(b)]);
  }
  return tokens;
}

}  // namespace moh
