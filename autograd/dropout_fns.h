// Differentiable dropout: the kept-mask drawn in the forward pass (from `gen`'s Philox stream) is
// saved as a bool tensor; the backward scales the kept gradients by 1/(1-p) and zeroes the rest.
#pragma once

#include "autograd/variable.h"
#include "core/random.h"

namespace moh::ag {

Variable dropout(const Variable& x, double p, Generator& gen);

}  // namespace moh::ag
