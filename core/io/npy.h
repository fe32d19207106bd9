// NumPy .npy files (numpy.lib.format): the magic "\x93NUMPY", a version byte pair (1.0, 2.0 or 3.0), the
// header length (uint16 little-endian in 1.0, uint32 in 2.0/3.0), the header: a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces and ended by '\n', then the
// array's raw bytes.
// Reading is strict: exactly those three keys, each once; descr one of float32 '<f4', float64 '<f8',
// float16 '<f2', int32 '<i4', int64 '<i8', uint8 '|u1', bool '|b1' (byte order '<', '=' or '|' read as the
// little-endian host's; '>' is byte-swapped); shape a tuple of non-negative integers; the data exactly
// shape product * itemsize bytes (truncated or trailing bytes are errors); bool bytes 0 or 1; the header at
// most kMaxNpyHeaderBytes. fortran_order True arrays are transposed into C order, so every tensor returned
// is contiguous, C-ordered and on the CPU. Writing: version 1.0 (2.0 when the header passes 65535 bytes),
// little-endian, C order, atomically (AtomicFileWriter); bfloat16 has no NumPy dtype and is refused.
// Every error is moh::Error naming the file (or the `where` given for bytes in memory).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/tensor.h"

namespace moh {

inline constexpr uint64_t kMaxNpyHeaderBytes = 1 << 20;

struct NpyHeader {
  DType dtype = DType::Float32;
  Shape shape;
  bool fortran_order = false;
  bool byte_swap = false;    // stored big-endian
  uint64_t data_offset = 0;  // bytes before the array data (preamble + header)
  uint64_t data_bytes() const { return uint64_t(shape_numel(shape)) * dtype_size(dtype); }
};

// Parses the preamble and header at the start of `bytes`, which may end anywhere after the header.
NpyHeader parse_npy_header(std::string_view bytes, const std::string& where);
// A whole .npy image in memory (the fuzzer's entry point and the .npz reader's).
Tensor parse_npy(std::string_view bytes, const std::string& where);

// The header of a .npy file, with its data size checked against the file's size.
NpyHeader read_npy_header(const std::string& path);
Tensor load_npy(const std::string& path);

// The preamble and header that precede `t`'s bytes in its .npy encoding (padded to 64 bytes).
std::string npy_header_bytes(const Tensor& t, const std::string& where);
// Writes t (any layout, any device; stored contiguous) as a .npy file, atomically.
void save_npy(const std::string& path, const Tensor& t);

}  // namespace moh
