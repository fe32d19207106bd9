// Concatenation, declared once for both backends: moh::cpu (core/cpu/join.cpp) and moh::cuda
// (core/cuda/join.cu, on the tensors' device and its compute stream) each define the list in
// join.inc; both copy each input into its slice of the output along `dim` with the copy kernel.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/join.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/join.inc"
}  // namespace moh::cuda
