// CPU concatenation: copies each input into its slice of the output along `dim`.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace moh::cpu {

// out (contiguous) = inputs concatenated along dim; inputs share out's dtype and its shape off dim.
void cat(const Tensor& out, const std::vector<Tensor>& inputs, int64_t dim);

}  // namespace moh::cpu
