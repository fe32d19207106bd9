// .npz reading and writing (see npz.h): the zip records of PKWARE's APPNOTE (local file header, central
// directory header, end of central directory, and their zip64 forms), CRC-32 and raw inflate from zlib.
#include "core/io/npz.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "core/io/checked_write.h"
#include "core/io/file_descriptor.h"
#include "core/io/npy.h"

namespace moh {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr size_t kLocalSize = 30, kCentralSize = 46, kEndSize = 22, kZip64EndSize = 56, kZip64LocatorSize = 20;
constexpr uint64_t kMax32 = 0xffffffff;
constexpr uint16_t kStored = 0, kDeflated = 8;
constexpr uint64_t kMaxDeflateRatio = 1032;

// ---- little-endian byte packing ----

uint64_t get(const char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

void put(std::string& out, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) out += char((v >> (8 * i)) & 0xff);
}

uint32_t crc_of(uint32_t crc, const void* data, size_t size) {
  return uint32_t(crc32_z(crc, static_cast<const Bytef*>(data), size));
}

// ---- reading ----

class ZipReader {
 public:
  explicit ZipReader(const std::string& path)
      : where_("npz file '" + path + "'"), fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    MOH_CHECK(fd_.fd >= 0, where_, ": cannot open: ", std::strerror(errno));
    struct stat st {};
    MOH_CHECK(::fstat(fd_.fd, &st) == 0 && S_ISREG(st.st_mode), where_, ": not a regular file");
    size_ = uint64_t(st.st_size);
  }

  std::map<std::string, Tensor> read_all() {
    const Directory dir = find_directory();
    const std::string cd = bytes(dir.offset, dir.size, "its central directory");
    std::map<std::string, Tensor> out;
    size_t at = 0;
    for (uint64_t i = 0; i < dir.entries; ++i) {
      MOH_CHECK(cd.size() - at >= kCentralSize && get(cd.data() + at, 4) == kCentralSig, where_,
                ": central directory entry ", i, " is malformed");
      const char* e = cd.data() + at;
      const uint64_t name_len = get(e + 28, 2), extra_len = get(e + 30, 2), comment_len = get(e + 32, 2);
      MOH_CHECK(cd.size() - at - kCentralSize >= name_len + extra_len + comment_len, where_,
                ": central directory entry ", i, " runs past the directory");
      Member m;
      m.name.assign(e + kCentralSize, name_len);
      m.flags = uint16_t(get(e + 8, 2));
      m.method = uint16_t(get(e + 10, 2));
      m.crc = uint32_t(get(e + 16, 4));
      m.packed = get(e + 20, 4);
      m.size = get(e + 24, 4);
      m.local_offset = get(e + 42, 4);
      MOH_CHECK(get(e + 34, 2) == 0 || get(e + 34, 2) == 0xffff, where_, ": member '", m.name, "' is on another disk");
      read_zip64_extra(std::string_view(e + kCentralSize + name_len, extra_len), &m);
      at += kCentralSize + name_len + extra_len + comment_len;
      const std::string key = key_of(m.name);
      MOH_CHECK(!out.count(key), where_, ": two members named '", m.name, "'");
      out.emplace(key, read_member(m));
    }
    return out;
  }

 private:
  struct Directory {
    uint64_t entries = 0, size = 0, offset = 0;
  };
  struct Member {
    std::string name;
    uint16_t flags = 0, method = 0;
    uint32_t crc = 0;
    uint64_t packed = 0, size = 0, local_offset = 0;
  };

  // n bytes at `offset`, which must lie inside the file.
  std::string bytes(uint64_t offset, uint64_t n, const char* what) const {
    MOH_CHECK(offset <= size_ && n <= size_ - offset, where_, ": ", what, " (", n, " bytes at offset ", offset,
              ") runs past the end of the file (", size_, " bytes)");
    std::string out(n, '\0');
    char* p = out.data();
    for (uint64_t done = 0; done < n;) {
      const ssize_t got = ::pread(fd_.fd, p + done, std::min<uint64_t>(n - done, 1u << 30), off_t(offset + done));
      if (got < 0 && errno == EINTR) continue;
      MOH_CHECK(got > 0, where_, ": cannot read ", what, ": ",
                got < 0 ? std::strerror(errno) : "unexpected end of file");
      done += uint64_t(got);
    }
    return out;
  }

  Directory find_directory() const {
    MOH_CHECK(size_ >= kEndSize, where_, ": not a zip archive (", size_, " bytes, too short)");
    const uint64_t tail_size = std::min<uint64_t>(size_, kEndSize + 0xffff);
    const std::string tail = bytes(size_ - tail_size, tail_size, "its end records");
    // The end record is the last one whose comment reaches exactly to the end of the file.
    size_t end = std::string::npos;
    for (size_t i = tail.size() - kEndSize + 1; i-- > 0;)
      if (get(tail.data() + i, 4) == kEndSig && i + kEndSize + get(tail.data() + i + 20, 2) == tail.size()) {
        end = i;
        break;
      }
    MOH_CHECK(end != std::string::npos, where_, ": not a zip archive (no end of central directory record)");
    const char* r = tail.data() + end;
    MOH_CHECK(get(r + 4, 2) == 0 && get(r + 6, 2) == 0, where_, ": multi-disk zip archives are not supported");
    Directory dir{get(r + 10, 2), get(r + 12, 4), get(r + 16, 4)};
    const uint64_t end_offset = size_ - tail_size + end;
    if (end_offset >= kZip64LocatorSize) {
      const std::string locator = bytes(end_offset - kZip64LocatorSize, kZip64LocatorSize, "its zip64 locator");
      if (get(locator.data(), 4) == kZip64LocatorSig) {
        const std::string z = bytes(get(locator.data() + 8, 8), kZip64EndSize, "its zip64 end record");
        MOH_CHECK(get(z.data(), 4) == kZip64EndSig, where_, ": the zip64 locator points at no zip64 end record");
        dir = {get(z.data() + 32, 8), get(z.data() + 40, 8), get(z.data() + 48, 8)};
      }
    }
    MOH_CHECK(dir.entries <= dir.size / kCentralSize, where_, ": the central directory (", dir.size,
              " bytes) cannot hold ", dir.entries, " entries");
    return dir;
  }

  // Replaces the 32-bit fields that say 0xffffffff by their zip64 values, in APPNOTE's order.
  void read_zip64_extra(std::string_view extra, Member* m) const {
    for (size_t at = 0; at + 4 <= extra.size();) {
      const uint64_t id = get(extra.data() + at, 2), len = get(extra.data() + at + 2, 2);
      MOH_CHECK(at + 4 + len <= extra.size(), where_, ": member '", m->name, "' has a malformed extra field");
      if (id == 1) {
        std::string_view field = extra.substr(at + 4, len);
        for (uint64_t* v : {&m->size, &m->packed, &m->local_offset}) {
          if (*v != kMax32) continue;
          MOH_CHECK(field.size() >= 8, where_, ": member '", m->name, "' has a short zip64 extra field");
          *v = get(field.data(), 8);
          field.remove_prefix(8);
        }
      }
      at += 4 + len;
    }
  }

  std::string key_of(const std::string& name) const {
    MOH_CHECK(name.size() > 4 && name.ends_with(".npy"), where_, ": member '", name,
              "' is not a .npy array (an .npz holds only <key>.npy members)");
    return name.substr(0, name.size() - 4);
  }

  Tensor read_member(const Member& m) const {
    const std::string what = where_ + " member '" + m.name + "'";
    MOH_CHECK((m.flags & 1) == 0, what, ": is encrypted");
    MOH_CHECK(m.method == kStored || m.method == kDeflated, what, ": compression method ", m.method,
              " is not supported (only stored and deflate)");
    const std::string local = bytes(m.local_offset, kLocalSize, "a local file header");
    MOH_CHECK(get(local.data(), 4) == kLocalSig, what, ": no local file header at offset ", m.local_offset);
    const uint64_t data_offset = m.local_offset + kLocalSize + get(local.data() + 26, 2) + get(local.data() + 28, 2);
    std::string data = bytes(data_offset, m.packed, "a member's data");
    if (m.method == kStored) {
      MOH_CHECK(m.packed == m.size, what, ": stored with ", m.packed, " bytes but its size says ", m.size);
    } else {
      data = inflate_member(data, m, what);
    }
    MOH_CHECK(crc_of(0, data.data(), data.size()) == m.crc, what, ": CRC-32 mismatch (the archive is corrupt)");
    return parse_npy(data, what);
  }

  static std::string inflate_member(const std::string& packed, const Member& m, const std::string& what) {
    MOH_CHECK(m.size <= packed.size() * kMaxDeflateRatio + 64, what, ": its size ", m.size,
              " is more than deflate can expand ", packed.size(), " bytes to");
    std::string out(m.size, '\0');
    z_stream z{};
    MOH_CHECK(inflateInit2(&z, -MAX_WBITS) == Z_OK, what, ": cannot start inflating");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    uint64_t in_left = packed.size(), out_left = out.size();
    int rc = Z_OK;
    while (rc == Z_OK) {
      const uInt in_chunk = uInt(std::min<uint64_t>(in_left, 1u << 30)),
                 out_chunk = uInt(std::min<uint64_t>(out_left, 1u << 30));
      z.avail_in = in_chunk;
      z.avail_out = out_chunk;
      rc = inflate(&z, Z_NO_FLUSH);
      in_left -= in_chunk - z.avail_in;
      out_left -= out_chunk - z.avail_out;
      if (rc == Z_OK && in_chunk == z.avail_in && out_chunk == z.avail_out) rc = Z_BUF_ERROR;  // no progress
    }
    inflateEnd(&z);
    MOH_CHECK(rc == Z_STREAM_END && out_left == 0, what, ": corrupt deflate data",
              rc == Z_STREAM_END ? " (shorter than its stated size)" : "");
    return out;
  }

  std::string where_;
  Fd fd_;
  uint64_t size_ = 0;
};

// ---- writing ----

constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01, 00:00: deterministic archives

std::string zip64_extra(const std::vector<uint64_t>& values) {
  std::string out;
  if (values.empty()) return out;
  put(out, 1, 2);
  put(out, values.size() * 8, 2);
  for (uint64_t v : values) put(out, v, 8);
  return out;
}

// The fields that local and central headers share, from "version needed" to the name and extra lengths;
// wide_sizes: the sizes are in the zip64 extra field.
void put_common(std::string& out, bool zip64, bool wide_sizes, uint32_t crc, uint64_t size, size_t name_len,
                size_t extra_len) {
  put(out, zip64 ? 45 : 20, 2);  // version needed to extract
  put(out, 0, 2);                // flags
  put(out, kStored, 2);
  put(out, 0, 2);  // time
  put(out, kDosDate, 2);
  put(out, crc, 4);
  put(out, wide_sizes ? kMax32 : size, 4);  // compressed size
  put(out, wide_sizes ? kMax32 : size, 4);  // uncompressed size
  put(out, name_len, 2);
  put(out, extra_len, 2);
}

}  // namespace

std::map<std::string, Tensor> load_npz(const std::string& path) { return ZipReader(path).read_all(); }

void save_npz(const std::string& path, const std::map<std::string, Tensor>& arrays) {
  const std::string where = "save_npz '" + path + "'";
  AtomicFileWriter out(path);
  std::string central;
  for (const auto& [key, t] : arrays) {
    MOH_CHECK(!key.empty() && key.find('/') == std::string::npos && key.size() < 0xfff0, where, ": invalid key '", key,
              "'");
    const std::string name = key + ".npy";
    const std::string header = npy_header_bytes(t, where + " array '" + key + "'");
    const Tensor c = t.to(Device::cpu()).contiguous();
    const uint64_t size = header.size() + c.nbytes(), offset = out.size();
    const uint32_t crc = crc_of(crc_of(0, header.data(), header.size()), c.raw_data(), c.nbytes());
    const bool big = size >= kMax32;
    std::string local;
    put(local, kLocalSig, 4);
    const std::string local_extra = big ? zip64_extra({size, size}) : "";
    put_common(local, big, big, crc, size, name.size(), local_extra.size());
    out.write(local + name + local_extra);
    out.write(header);
    out.write(c.raw_data(), c.nbytes());

    std::vector<uint64_t> wide;
    if (big) wide = {size, size};
    if (offset >= kMax32) wide.push_back(offset);
    const std::string central_extra = zip64_extra(wide);
    put(central, kCentralSig, 4);
    put(central, (3 << 8) | 45, 2);  // made by: Unix, zip 4.5
    put_common(central, !wide.empty(), big, crc, size, name.size(), central_extra.size());
    put(central, 0, 2);                        // comment length
    put(central, 0, 2);                        // disk
    put(central, 0, 2);                        // internal attributes
    put(central, uint64_t(0100644) << 16, 4);  // external: a regular file, rw-r--r--
    put(central, offset >= kMax32 ? kMax32 : offset, 4);
    central += name + central_extra;
  }
  const uint64_t cd_offset = out.size(), cd_size = central.size(), entries = arrays.size();
  std::string end;
  if (cd_offset >= kMax32 || cd_size >= kMax32 || entries >= 0xffff) {
    const uint64_t zip64_end_offset = cd_offset + cd_size;
    put(end, kZip64EndSig, 4);
    put(end, kZip64EndSize - 12, 8);
    put(end, (3 << 8) | 45, 2);
    put(end, 45, 2);
    put(end, 0, 4);
    put(end, 0, 4);
    put(end, entries, 8);
    put(end, entries, 8);
    put(end, cd_size, 8);
    put(end, cd_offset, 8);
    put(end, kZip64LocatorSig, 4);
    put(end, 0, 4);
    put(end, zip64_end_offset, 8);
    put(end, 1, 4);
  }
  put(end, kEndSig, 4);
  put(end, 0, 4);  // disk numbers
  put(end, std::min<uint64_t>(entries, 0xffff), 2);
  put(end, std::min<uint64_t>(entries, 0xffff), 2);
  put(end, std::min(cd_size, kMax32), 4);
  put(end, std::min(cd_offset, kMax32), 4);
  put(end, 0, 2);  // comment length
  out.write(central + end);
  out.commit();
}

}  // namespace moh
