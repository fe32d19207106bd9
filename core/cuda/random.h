// CUDA twin of core/cpu/random.h: the same kernels with the same contracts (see that header), on
// the tensors' device, launched on its compute stream. Float math also accepts bfloat16/float16
// (computed in float32).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh::cuda {

void fill_uniform(const Tensor& out, double low, double high, uint64_t seed, uint64_t offset);
void fill_normal(const Tensor& out, double mean, double std, uint64_t seed, uint64_t offset);
void fill_bernoulli(const Tensor& out, double p, uint64_t seed, uint64_t offset);

}  // namespace moh::cuda
