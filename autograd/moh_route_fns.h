// The fused learned MoH router (core/ops.h: moh_route) as one tape node: gates and probabilities are
// differentiable (the gates reach the attention outputs, the probabilities the balance loss); the
// selection (mask, ids) is not.
#pragma once

#include "autograd/variable.h"
#include "core/ops.h"

namespace moh::ag {

struct Route {
  Variable gates;  // [N, heads]
  Variable probs;  // [N, E]
  Tensor mask;     // [N, E]
  Tensor topk;     // [N, topk] int64, ascending
};
Route moh_route(const Variable& logits, int64_t heads, int64_t shared, int64_t topk, double eps);

}  // namespace moh::ag
