// Differentiable normalisation over the last dim: layer_norm (weight and bias optional: pass an
// undefined Variable) and rms_norm (weight optional). Forward and backward are the fused ops of
// core/ops.h; the per-row mean/rstd statistics are saved, not recomputed.
#pragma once

#include "autograd/variable.h"

namespace moh::ag {

Variable layer_norm(const Variable& x, const Variable& weight, const Variable& bias, double eps = 1e-5);
Variable rms_norm(const Variable& x, const Variable& weight, double eps = 1e-6);

}  // namespace moh::ag
