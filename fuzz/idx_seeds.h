// Seed IDX files (MNIST format, data/idx.h) for the idx and idx_gzip targets, and gzip compression.
#pragma once

#include <zlib.h>

#include <initializer_list>

#include "fuzz/fuzz_target.h"

namespace moh::fuzz {

// An IDX file: 00 00 type ndims, big-endian uint32 dims, then `payload` as the elements' bytes.
inline Bytes idx_file(uint8_t type, std::initializer_list<uint32_t> dims, const Bytes& payload) {
  Bytes b{0, 0, type, uint8_t(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) b.push_back(uint8_t(d >> shift));
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

// `data` as one gzip member (what `gzip` writes).
inline Bytes gzip(const uint8_t* data, size_t size) {
  z_stream z{};
  MOH_CHECK(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK,
            "fuzz: deflateInit2 failed");
  Bytes out(deflateBound(&z, uLong(size)));
  z.next_in = const_cast<uint8_t*>(data);
  z.avail_in = uInt(size);
  z.next_out = out.data();
  z.avail_out = uInt(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  MOH_CHECK(rc == Z_STREAM_END, "fuzz: deflate failed");
  return out;
}

// Valid files of every type code, plus a 0-d and an empty array.
inline std::vector<std::pair<std::string, Bytes>> idx_seed_files() {
  Bytes labels{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  Bytes images(2 * 4 * 4);
  for (size_t i = 0; i < images.size(); ++i) images[i] = uint8_t(i * 7);
  return {{"labels_u8.idx", idx_file(0x08, {10}, labels)},
          {"images_u8.idx", idx_file(0x08, {2, 4, 4}, images)},
          {"i8.idx", idx_file(0x09, {3}, {0x80, 0x00, 0x7f})},
          {"i16.idx", idx_file(0x0B, {2}, {0xff, 0xfe, 0x01, 0x02})},
          {"i32.idx", idx_file(0x0C, {1, 2}, {0x80, 0, 0, 0, 0, 0, 0, 5})},
          {"f32.idx", idx_file(0x0D, {2}, {0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0})},
          {"f64.idx", idx_file(0x0E, {1}, {0x3f, 0xf0, 0, 0, 0, 0, 0, 0})},
          {"scalar.idx", idx_file(0x08, {}, {42})},
          {"empty.idx", idx_file(0x08, {0, 28}, {})}};
}

}  // namespace moh::fuzz
