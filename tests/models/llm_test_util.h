// Helpers of the LLM model tests: random token ids.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/factory.h"
#include "core/random.h"

namespace moh::test {

// int64 [batch, tokens] ids drawn uniformly from [0, vocab), the same for the same seed.
inline Tensor random_tokens(int64_t batch, int64_t tokens, int64_t vocab, uint64_t seed) {
  Generator gen(seed);
  std::vector<int64_t> ids;
  for (double u : uniform({batch * tokens}, 0.0, double(vocab), gen, DType::Float64).to_vector<double>())
    ids.push_back(std::min(int64_t(u), vocab - 1));
  return from_vector(ids, {batch, tokens}, DType::Int64);
}

}  // namespace moh::test
