// The fused learned MoH router (moh_route, contract in core/ops.h), declared once for both backends:
// moh::cpu (core/cpu/moh_route.cpp) and moh::cuda (core/cuda/moh_route.cu, one thread per token on the
// tensors' compute stream; also bfloat16/float16, computed in float32) each define the list in
// moh_route.inc around the per-token math of core/math/moh_route_math.h. Every tensor is contiguous;
// outputs are preallocated and overwritten completely; grad_gates / grad_probs may be undefined (zero).
#pragma once

#include "core/math/moh_route_math.h"
#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/moh_route.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/moh_route.inc"
}  // namespace moh::cuda
