// CPU reduction kernels: sum/mean/amax/amin over any set of dims and argmax along one dim.
// The front end (core/ops/reduce.cpp) allocates `out` contiguous in keepdim form (x's shape with
// every reduced dim set to 1) and checks dtypes and empty reductions.
#pragma once

#include <vector>

#include "core/tensor.h"

namespace moh::cpu {

enum class ReduceOp { Sum, Mean, Amax, Amin };
const char* op_name(ReduceOp op);  // "sum", "mean", ... for error messages (both backends)

// reduced[d] says whether dim d of x is reduced. float32 accumulates in double, ints in int64;
// results do not depend on the thread count. Amax/amin propagate NaN.
void reduce(ReduceOp op, const Tensor& out, const Tensor& x, const std::vector<bool>& reduced);
// out (int64) = index of the largest element along `dim`; ties and NaN: the first one wins.
void argmax(const Tensor& out, const Tensor& x, int64_t dim);

}  // namespace moh::cpu
