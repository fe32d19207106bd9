// Fused cross entropy, declared once for both backends: moh::cpu (core/cpu/cross_entropy.cpp) and
// moh::cuda (core/cuda/cross_entropy.cu, on the tensors' device and its compute stream; also
// bfloat16/float16 logits, computed in float32) each define the list in cross_entropy.inc. One pass
// over each logits row finds its log-sum-exp (online softmax, core/math/softmax_math.h); the backward
// turns it into probabilities once, writing the gradient. logits [N, C], target int64 [N], lse [N] and
// grad_logits [N, C] are contiguous; loss and grad_loss are 0-d (Mean/Sum) or [N] (None). Targets are
// validated by the kernels, before any row runs (core/math/cross_entropy_target.h: the error).
#pragma once

#include <cstdint>

#include "core/ops.h"

namespace moh::cpu {
#include "core/kernels/cross_entropy.inc"
}  // namespace moh::cpu

namespace moh::cuda {
#include "core/kernels/cross_entropy.inc"
}  // namespace moh::cuda
