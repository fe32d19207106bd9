// Differentiable 2-D convolution (NCHW): one tape node over (x, weight[, bias]) whose backward is
// the fused conv2d_backward of core/ops.h, computing only the gradients the inputs need.
#pragma once

#include "autograd/variable.h"
#include "core/math/conv_geometry.h"

namespace moh::ag {

// bias may be an undefined Variable (no bias).
Variable conv2d(const Variable& x, const Variable& weight, const Variable& bias, const Conv2dParams& params = {});

}  // namespace moh::ag
