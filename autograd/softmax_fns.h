// Differentiable softmax and log_softmax along `dim`; the backward calls the fused
// softmax_backward / log_softmax_backward ops on the saved output.
#pragma once

#include <cstdint>

#include "autograd/variable.h"

namespace moh::ag {

Variable softmax(const Variable& x, int64_t dim);
Variable log_softmax(const Variable& x, int64_t dim);

}  // namespace moh::ag
