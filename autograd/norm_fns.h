// Differentiable normalisation over the last dim: layer_norm (weight and bias optional: pass an
// undefined Variable) and rms_norm (weight optional). Forward and backward are the fused ops of
// core/ops.h; the per-row mean/rstd statistics are saved, not recomputed. group_norm (channels
// second, as torch.nn.GroupNorm) is the fused op of core/ops.h too, its per-channel affine included.
#pragma once

#include "autograd/variable.h"

namespace moh::ag {

Variable layer_norm(const Variable& x, const Variable& weight, const Variable& bias, double eps = 1e-5);
Variable rms_norm(const Variable& x, const Variable& weight, double eps = 1e-6);
// x [N, C, ...] normalised over each of `groups` channel groups (with the trailing dims); weight and
// bias [C] optional. groups must divide C.
Variable group_norm(const Variable& x, int64_t groups, const Variable& weight, const Variable& bias,
                    double eps = 1e-5);

}  // namespace moh::ag
