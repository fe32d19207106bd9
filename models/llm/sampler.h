// Sampler: picks the next token of each sequence from a language model's logits, on the host.
// Filters, in this order (as Hugging Face's generate): temperature (logits / T; T = 0 is greedy
// argmax, the first of equal maxima), top-k (keep the k largest logits, ties to the lower id; 0 =
// off), top-p / nucleus (keep the smallest set of most probable tokens whose probability mass
// reaches p; 1 = off); the kept probabilities are renormalised and one token is drawn by inverse CDF
// from a uniform number of the sampler's Generator (core/random.h), so a seed gives the same tokens
// on every run and device.
#pragma once

#include <cstdint>
#include <vector>

#include "core/random.h"
#include "core/tensor.h"

namespace moh {

struct SamplerOptions {
  double temperature = 0.8;  // >= 0; 0 = greedy
  int64_t top_k = 200;       // >= 0; 0 = every token
  double top_p = 1.0;        // in (0, 1]
};

// Throws (moh::Error) naming the option unless each is in its range above.
void validate(const SamplerOptions& options);

// The distribution the sampler draws from for one row of logits [V]: probabilities summing to 1,
// 0 for every filtered token (one-hot at the argmax when temperature is 0).
std::vector<double> sampling_distribution(const std::vector<double>& logits, const SamplerOptions& options);

// The token whose cumulative probability first exceeds u in [0, 1) (the last kept token when
// rounding leaves u above the total).
int64_t draw_token(const std::vector<double>& probs, double u);

class Sampler {
 public:
  Sampler(const SamplerOptions& options, uint64_t seed);
  // logits [B, V] (any floating dtype and device) -> one token id per row.
  std::vector<int64_t> sample(const Tensor& logits);

  const SamplerOptions& options() const { return options_; }

 private:
  SamplerOptions options_;
  Generator gen_;
};

}  // namespace moh
