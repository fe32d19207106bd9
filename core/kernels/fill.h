// The kernel that writes one value into every element of a (possibly strided) tensor, declared once
// for both backends: moh::cpu (core/cpu/fill.cpp) and moh::cuda (core/cuda/fill.cu, on the tensor's
// device and its compute stream) each define the list in fill.inc. The value is stored as
// from_double<T> (core/math/convert.h), so both write the same bits.
#pragma once

#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/fill.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/fill.inc"
}  // namespace moh::cuda
