// Reading (possibly gzip-compressed) files through zlib (see file_bytes.h).
#include "data/text/file_bytes.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/error.h"

namespace moh::text {
namespace {

std::string inflate_gzip(const std::string& packed, const std::string& path) {
  z_stream stream{};
  MOH_CHECK(inflateInit2(&stream, 16 + MAX_WBITS) == Z_OK, "'", path, "': cannot start gzip decompression");
  std::string out;
  char buffer[1 << 16];
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
  stream.avail_in = uInt(packed.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof(buffer);
    rc = inflate(&stream, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      const std::string why = rc == Z_BUF_ERROR ? "the file is truncated" : (stream.msg ? stream.msg : "corrupt data");
      inflateEnd(&stream);
      MOH_FAIL("'", path, "': gzip decompression failed (", why, ")");
    }
    out.append(buffer, sizeof(buffer) - stream.avail_out);
    if (rc == Z_OK && stream.avail_in == 0 && stream.avail_out != 0) {
      inflateEnd(&stream);
      MOH_FAIL("'", path, "': gzip decompression failed (the file is truncated)");
    }
  }
  inflateEnd(&stream);
  return out;
}

}  // namespace

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  MOH_CHECK(in, "cannot open '", path, "': ", std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  MOH_CHECK(!in.bad(), "cannot read '", path, "'");
  const bool gzip = bytes.size() >= 2 && uint8_t(bytes[0]) == 0x1f && uint8_t(bytes[1]) == 0x8b;
  return gzip ? inflate_gzip(bytes, path) : bytes;
}

}  // namespace moh::text
