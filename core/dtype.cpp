// Sizes and names of the dtypes.
#include "core/dtype.h"

#include "core/error.h"

namespace moh {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::BFloat16: return 2;
    case DType::Float16: return 2;
    case DType::Int32: return 4;
    case DType::Int64: return 8;
    case DType::UInt8: return 1;
    case DType::Bool: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::BFloat16: return "bfloat16";
    case DType::Float16: return "float16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::UInt8: return "uint8";
    case DType::Bool: return "bool";
  }
  return "unknown";
}

DType dtype_from_name(std::string_view name) {
  for (DType t : {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16, DType::Int32,
                  DType::Int64, DType::UInt8, DType::Bool})
    if (dtype_name(t) == name) return t;
  MOH_FAIL("unknown dtype '", name, "' (expected float32, float64, bfloat16, float16, int32, int64, uint8 or bool)");
}

bool is_floating(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::BFloat16 || t == DType::Float16;
}

}  // namespace moh
