// CPU softmax / log_softmax and their backward over one dim of a contiguous tensor.
// Every tensor passed here is contiguous, of one floating dtype and one shape, with dim already
// wrapped (0-d inputs arrive viewed as [1]); the front end (core/ops/softmax.cpp) guarantees it.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh::cpu {

// out = softmax(x, dim), or log_softmax when `log`.
void softmax(const Tensor& x, const Tensor& out, int64_t dim, bool log);
// grad_in = d/dx of sum(grad_out * f(x)) given out = f(x), f = softmax or log_softmax (`log`).
void softmax_backward(const Tensor& grad_out, const Tensor& out, const Tensor& grad_in, int64_t dim, bool log);

}  // namespace moh::cpu
