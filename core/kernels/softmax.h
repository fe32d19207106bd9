// softmax / log_softmax and their backward over one dim, declared once for both backends: moh::cpu
// (core/cpu/softmax.cpp) and moh::cuda (core/cuda/softmax.cu, on the tensors' device and its compute
// stream; also bfloat16/float16, computed in float32) each define the list in softmax.inc. Every
// tensor passed here is contiguous, of one floating dtype and one shape, with dim already wrapped
// (0-d inputs arrive viewed as [1]); the front end (core/ops/softmax.cpp) guarantees it.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh::cpu {
#include "core/kernels/softmax.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/softmax.inc"
}  // namespace moh::cuda
