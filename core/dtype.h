// DType: the element types a Tensor can hold, with their sizes, names and C++ twins.
// Ops never promote types implicitly: mixing dtypes is an error, casts are explicit (Tensor::to).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/half.h"

namespace moh {

enum class DType : uint8_t { Float32, Float64, BFloat16, Float16, Int32, Int64, UInt8, Bool };

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);  // "float32", "bfloat16", ... (PyTorch spelling)
DType dtype_from_name(std::string_view name);  // throws on an unknown name
bool is_floating(DType t);

template <class T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::Float32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::Float64; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::BFloat16; };
template <> struct DTypeOf<Float16> { static constexpr DType value = DType::Float16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::Bool; };
template <class T> inline constexpr DType dtype_of = DTypeOf<T>::value;

}  // namespace moh
