// Differentiable image resampling over NCHW tensors: nearest upsampling by an integer scale and
// average pooling (no padding, floor mode). Forward and backward are the ops of core/ops.h; the
// tape nodes save only sizes, never the input.
#pragma once

#include <cstdint>

#include "autograd/variable.h"

namespace moh::ag {

Variable upsample_nearest2d(const Variable& x, int64_t scale);
Variable avg_pool2d(const Variable& x, int64_t kernel, int64_t stride);

}  // namespace moh::ag
