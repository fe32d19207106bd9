// The reduction kernels: sum/mean/amax/amin over any set of dims (core/math/reduce_ops.h) and argmax
// along one dim, declared once for both backends: moh::cpu (core/cpu/reduce.cpp) and moh::cuda
// (core/cuda/reduce.cu, on the tensors' device and its compute stream; also bfloat16/float16,
// accumulated in float32) each define the list in reduce.inc. The front end (core/ops/reduce.cpp)
// allocates `out` contiguous in keepdim form (x's shape with every reduced dim set to 1) and checks
// dtypes and empty reductions.
#pragma once

#include <cstdint>
#include <vector>

#include "core/math/reduce_ops.h"
#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/reduce.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/reduce.inc"
}  // namespace moh::cuda
