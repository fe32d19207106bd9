// Differentiable reductions: sum, mean, amax (the gradient is shared equally among tied maxima)
// and variance. Empty `dims` reduces over all dims, as in core/ops.h.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/variable.h"

namespace moh::ag {

Variable sum(const Variable& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Variable mean(const Variable& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Variable amax(const Variable& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Variable variance(const Variable& x, const std::vector<int64_t>& dims = {}, int64_t correction = 1,
                  bool keepdim = false);

}  // namespace moh::ag
