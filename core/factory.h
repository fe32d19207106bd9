// Tensor factories: constant fills, ranges and tensors from host data. Random factories live in
// core/random.h (they need a Generator).
#pragma once

#include <vector>

#include "core/tensor.h"

namespace moh {

Tensor zeros(const Shape& shape, DType dtype = DType::Float32, Device device = Device::cpu());
Tensor ones(const Shape& shape, DType dtype = DType::Float32, Device device = Device::cpu());
Tensor full(const Shape& shape, double value, DType dtype = DType::Float32, Device device = Device::cpu());
Tensor scalar_tensor(double value, DType dtype = DType::Float32, Device device = Device::cpu());
// [start, end) in steps of `step`, like torch.arange.
Tensor arange(double start, double end, double step = 1, DType dtype = DType::Int64,
              Device device = Device::cpu());
Tensor arange(int64_t end, DType dtype = DType::Int64, Device device = Device::cpu());
// Copies host values (converted to dtype) into a new tensor; values.size() must equal numel.
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, DType dtype = dtype_of<T>,
                   Device device = Device::cpu());
Tensor zeros_like(const Tensor& t);
Tensor empty_like(const Tensor& t);

}  // namespace moh
