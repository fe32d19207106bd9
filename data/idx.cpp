// IDX reader on zlib's gz* stream, which reads gzip and raw files alike. Before allocating, the size
// the dims imply is checked against what the file can hold (its size when raw; the deflate bound of
// 1032 output bytes per input byte when gzip), so a corrupt header never triggers a huge allocation.
#include "data/idx.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace moh {
namespace {

struct IdxType {
  uint8_t code;
  const char* name;
  size_t file_size;  // bytes per element in the file
  DType dtype;       // tensor dtype it becomes
};

constexpr IdxType kTypes[] = {{0x08, "uint8", 1, DType::UInt8},    {0x09, "int8", 1, DType::Int32},
                              {0x0B, "int16", 2, DType::Int32},    {0x0C, "int32", 4, DType::Int32},
                              {0x0D, "float32", 4, DType::Float32}, {0x0E, "float64", 8, DType::Float64}};

// Closes a gzFile on scope exit.
struct GzFile {
  gzFile f;
  explicit GzFile(gzFile file) : f(file) {}
  ~GzFile() {
    if (f) gzclose(f);
  }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;
};

// Reads up to n bytes; returns how many were read (fewer only at the end of the data). A gzip stream
// that ends early or is corrupt throws, naming the zlib error.
uint64_t read_some(gzFile f, void* dst, uint64_t n, const std::string& where) {
  char* p = static_cast<char*>(dst);
  uint64_t total = 0;
  while (total < n) {
    const int got = gzread(f, p + total, unsigned(std::min<uint64_t>(n - total, 1u << 30)));
    if (got <= 0) {
      int err = Z_OK;
      std::string msg = gzerror(f, &err);  // "<path>: <what>"; the path is already in `where`
      if (const size_t colon = msg.rfind(": "); colon != std::string::npos) msg.erase(0, colon + 2);
      MOH_CHECK(got == 0 && err == Z_OK, where, ": cannot read gzip data after ", total, " of ", n,
                " wanted bytes: ", err == Z_ERRNO ? std::strerror(errno) : msg,
                err == Z_BUF_ERROR ? " (the gzip stream is truncated)" : "");
      break;
    }
    total += uint64_t(got);
  }
  return total;
}

std::string hex_bytes(const unsigned char* b, size_t n) {
  std::string s;
  char buf[4];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%s%02x", i ? " " : "", b[i]);
    s += buf;
  }
  return s;
}

// Reverses the bytes of each `size`-byte element in place (big-endian file -> little-endian host).
void swap_bytes(unsigned char* p, uint64_t count, size_t size) {
  if (size == 1) return;
  for (uint64_t i = 0; i < count; ++i) std::reverse(p + i * size, p + (i + 1) * size);
}

}  // namespace

Tensor read_idx(const std::string& path) {
  static_assert(std::endian::native == std::endian::little, "read_idx assumes a little-endian host");
  const std::string where = "read_idx: '" + path + "'";
  struct stat st {};
  MOH_CHECK(::stat(path.c_str(), &st) == 0, where, ": cannot open: ", std::strerror(errno));
  MOH_CHECK(S_ISREG(st.st_mode), where, ": not a regular file");
  GzFile gz(gzopen(path.c_str(), "rb"));
  MOH_CHECK(gz.f != nullptr, where, ": cannot open: ", std::strerror(errno));
  gzbuffer(gz.f, 1u << 18);

  unsigned char head[4];
  const uint64_t got_head = read_some(gz.f, head, 4, where);
  MOH_CHECK(got_head == 4, where, ": truncated header: expected 4 bytes (0x00 0x00 type ndims), got ",
            got_head);
  MOH_CHECK(head[0] == 0 && head[1] == 0, where, ": bad magic: expected the bytes 00 00 <type> <ndims>, found ",
            hex_bytes(head, 4), " (not an IDX file)");
  const auto* type =
      std::find_if(std::begin(kTypes), std::end(kTypes), [&](const IdxType& t) { return t.code == head[2]; });
  MOH_CHECK(type != std::end(kTypes), where, ": unknown type code ", hex_bytes(head + 2, 1),
            " (expected 08 uint8, 09 int8, 0b int16, 0c int32, 0d float32 or 0e float64)");

  const int ndims = head[3];
  std::vector<unsigned char> dim_bytes(size_t(ndims) * 4);
  const uint64_t got_dims = read_some(gz.f, dim_bytes.data(), dim_bytes.size(), where);
  MOH_CHECK(got_dims == dim_bytes.size(), where, ": truncated header: ", ndims, " dims need ",
            dim_bytes.size(), " bytes, got ", got_dims);
  Shape shape;
  uint64_t numel = 1;
  bool too_big = false;
  for (int d = 0; d < ndims; ++d) {
    const unsigned char* b = &dim_bytes[size_t(d) * 4];
    const uint64_t v = (uint64_t(b[0]) << 24) | (uint64_t(b[1]) << 16) | (uint64_t(b[2]) << 8) | b[3];
    shape.push_back(int64_t(v));
    // The non-zero dims multiply even beside a 0 (a tensor's strides do), so they must fit too.
    const uint64_t factor = std::max<uint64_t>(v, 1);
    if (numel > uint64_t(std::numeric_limits<int64_t>::max()) / 8 / factor) too_big = true;
    else numel *= factor;
  }
  MOH_CHECK(!too_big, where, ": dims ", shape_str(shape), " hold too many elements to address");
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) numel = 0;
  const uint64_t need = numel * type->file_size;

  const uint64_t file_size = uint64_t(st.st_size);
  const uint64_t header_size = 4 + dim_bytes.size();
  if (gzdirect(gz.f)) {
    const uint64_t have = file_size - header_size;
    MOH_CHECK(need <= have, where, ": truncated: dims ", shape_str(shape), " of ", type->name, " need ", need,
              " bytes of data, got ", have);
  } else {
    MOH_CHECK(need / 1032 <= file_size, where, ": dims ", shape_str(shape), " of ", type->name, " need ",
              need, " bytes of data, more than a ", file_size, "-byte gzip file can hold (corrupt header?)");
  }

  Tensor out = Tensor::empty(shape, type->dtype);
  const bool widen = type->dtype == DType::Int32 && type->file_size < 4;
  std::vector<unsigned char> narrow(widen ? need : 0);
  auto* bytes = widen ? narrow.data() : static_cast<unsigned char*>(out.raw_data());
  const uint64_t got = read_some(gz.f, bytes, need, where);
  MOH_CHECK(got == need, where, ": truncated: dims ", shape_str(shape), " of ", type->name, " need ", need,
            " bytes of data, got ", got);
  unsigned char extra[1];
  MOH_CHECK(read_some(gz.f, extra, 1, where) == 0, where, ": trailing bytes after the ", need,
            " bytes of data that dims ", shape_str(shape), " of ", type->name, " need");

  swap_bytes(bytes, numel, type->file_size);
  if (widen) {
    int32_t* dst = out.data<int32_t>();
    if (type->file_size == 1) {
      for (uint64_t i = 0; i < numel; ++i) dst[i] = int8_t(narrow[i]);
    } else {
      for (uint64_t i = 0; i < numel; ++i) {
        int16_t v;
        std::memcpy(&v, &narrow[i * 2], 2);
        dst[i] = v;
      }
    }
  }
  return out;
}

}  // namespace moh
