// gate_rows (core/ops.h) as one tape node: MoH's attention rows scaled by their pairs' gates and, with
// scatter, placed into the [P, D] rows of every (token, head) pair; rows and gates are differentiable.
#pragma once

#include "autograd/variable.h"
#include "core/ops.h"

namespace moh::ag {

Variable gate_rows(const Variable& rows, const Variable& gates, const Tensor& index, bool scatter);

}  // namespace moh::ag
