// CUDA twin of core/cpu/indexing.h: the same kernels with the same contracts (see that header), on
// the tensors' device, launched on its compute stream. Float math also accepts bfloat16/float16
// (computed in float32).
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace moh::cuda {

void check_index_range(const Tensor& index, int64_t limit, const char* op, const char* name,
                       const std::string& what);

void gather(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index);

void scatter(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, bool accumulate);

void topk(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t k, bool largest);

void one_hot(const Tensor& out, const Tensor& indices);

}  // namespace moh::cuda
