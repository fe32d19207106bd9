// CPU kernels that fill contiguous tensors from the Philox stream (see core/math/philox.h).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh::cpu {

// out is contiguous; element i draws from counter offset + i/4 (uniform) or offset + i/2 (normal).
void fill_uniform(const Tensor& out, double low, double high, uint64_t seed, uint64_t offset);
void fill_normal(const Tensor& out, double mean, double std, uint64_t seed, uint64_t offset);
void fill_bernoulli(const Tensor& out, double p, uint64_t seed, uint64_t offset);

}  // namespace moh::cpu
