// Helpers shared by the autograd tests: random float64 leaves (contiguous or strided) and
// EXPECT_GRADCHECK, which prints gradcheck's summary (worst element) when it fails.
#pragma once

#include <gtest/gtest.h>

#include "autograd/autograd.h"
#include "core/factory.h"
#include "core/random.h"

namespace moh::ag::agt {

// A float64 leaf requiring grad, uniform in [low, high).
inline Variable leaf(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0) {
  Generator gen(seed);
  return Variable(uniform(shape, low, high, gen, DType::Float64), true);
}

// A non-contiguous float64 leaf of `shape` (the transpose of a contiguous [.., b, a] tensor).
inline Variable transposed_leaf(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0) {
  Shape flipped = shape;
  std::swap(flipped[flipped.size() - 1], flipped[flipped.size() - 2]);
  Generator gen(seed);
  Variable v(uniform(flipped, low, high, gen, DType::Float64).transpose(-2, -1), true);
  EXPECT_FALSE(v.data().is_contiguous());
  return v;
}

inline std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

}  // namespace moh::ag::agt

#define EXPECT_GRADCHECK(...)                                       \
  do {                                                              \
    auto gradcheck_result_ = ::moh::ag::gradcheck(__VA_ARGS__);     \
    EXPECT_TRUE(gradcheck_result_.ok) << gradcheck_result_.message; \
    EXPECT_GT(gradcheck_result_.elements_checked, 0);               \
  } while (0)
