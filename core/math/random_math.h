// Per-element rules of the random fills (uniform, normal, bernoulli), shared by the CPU and CUDA
// backends so element i of a tensor gets the same bits on both. Each returns the double that
// from_double<T> (core/math/convert.h) stores; the counters each element reads are documented in
// core/math/philox.h (the factories in core/random.cpp reserve them).
#pragma once

#include <cstdint>

#include "core/macros.h"
#include "core/math/philox.h"

namespace moh {

// Uniform in (low, high]: 24 random bits, or (wide, for float64 outputs) 53 bits from the words
// (2i, 2i+1) of stream 2, i.e. word pair i % 2 of counter offset + i / 2.
MOH_HOST_DEVICE MOH_FORCE_INLINE double uniform_value(uint64_t seed, uint64_t offset, uint64_t i, double low,
                                                      double span, bool wide) {
  if (wide) {
    const Philox4 r = philox4x32(seed, offset + i / 2, 2);
    const uint32_t k = uint32_t(i % 2) * 2;
    return philox_affine(low, span, philox_uniform_double(r.v[k], r.v[k + 1]));
  }
  return philox_affine(low, span, double(philox_uniform(philox_word(seed, offset, i))));
}

MOH_HOST_DEVICE MOH_FORCE_INLINE double normal_value(uint64_t seed, uint64_t offset, uint64_t i, double mean,
                                                     double std) {
  return philox_affine(mean, std, double(philox_normal(seed, offset, i)));
}

// 1 with probability p: the uniform draw is <= threshold = float(p).
MOH_HOST_DEVICE MOH_FORCE_INLINE double bernoulli_value(uint64_t seed, uint64_t offset, uint64_t i,
                                                        float threshold) {
  return philox_uniform(philox_word(seed, offset, i)) <= threshold ? 1.0 : 0.0;
}

}  // namespace moh
