// The kernels that fill contiguous tensors from the Philox stream (core/math/philox.h), declared once
// for both backends: moh::cpu (core/cpu/random.cpp) and moh::cuda (core/cuda/random.cu, on the
// tensor's device and its compute stream) each define the list in random.inc. Both compute element i
// by the rules of core/math/random_math.h, so a seed and offset give bit-identical tensors.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/random.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/random.inc"
}  // namespace moh::cuda
