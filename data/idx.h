// IDX files (the MNIST format): bytes 0 0, a type code, the number of dims, then each dim as a
// big-endian uint32 and the elements big-endian in row-major order. Files may be raw or gzip-compressed
// (detected from the content, not the name). The whole file is validated: magic, type code, a sane
// element count, exactly that many data bytes and nothing after them; errors name the file.
#pragma once

#include <string>

#include "core/tensor.h"

namespace moh {

// The file's array as a contiguous CPU tensor of shape [dims...]: type 0x08 (uint8) -> UInt8,
// 0x09 (int8), 0x0B (int16) and 0x0C (int32) -> Int32, 0x0D -> Float32, 0x0E -> Float64.
Tensor read_idx(const std::string& path);

}  // namespace moh
