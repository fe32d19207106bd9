// CPU dropout forward: draws the keep mask from the Philox stream by the rule in
// core/math/dropout_math.h (bit-identical to the CUDA kernel) and scales the kept values.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh::cpu {

// out (x's dtype) and mask (bool) are contiguous with x's shape; x is contiguous, float32/float64.
void dropout(const Tensor& out, const Tensor& mask, const Tensor& x, double p, uint64_t seed,
             uint64_t offset);

}  // namespace moh::cpu
