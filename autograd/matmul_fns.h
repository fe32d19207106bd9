// Differentiable matrix products: matmul (batch dims broadcast; the gradient of a broadcast
// operand is summed over the batch) and bmm ([B, M, K] @ [B, K, N]).
#pragma once

#include "autograd/variable.h"

namespace moh::ag {

Variable matmul(const Variable& a, const Variable& b);
Variable bmm(const Variable& a, const Variable& b);

}  // namespace moh::ag
