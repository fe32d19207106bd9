// CPU kernel that writes one value into every element of a (possibly strided) tensor.
#pragma once

#include "core/tensor.h"

namespace moh::cpu {

void fill(const Tensor& self, double value);

}  // namespace moh::cpu
