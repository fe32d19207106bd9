// CPU strided copy with dtype conversion: the kernel behind Tensor::copy_, contiguous() and to(dtype).
#pragma once

#include "core/tensor.h"

namespace moh::cpu {

// dst and src have the same shape (src already expanded); dtypes may differ (values are cast,
// floats to ints truncate toward zero, anything to bool is `!= 0`).
void copy(const Tensor& dst, const Tensor& src);

}  // namespace moh::cpu
