// Safetensors reader and atomic writer. The reader parses and checks the header completely
// (every error names the file and, where there is one, the tensor) before it allocates or reads
// tensor data; tensors are read with pread straight into their storage. Little-endian hosts only.
#include "core/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/io/file_descriptor.h"

namespace moh {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

using Json = nlohmann::json;

constexpr std::pair<DType, const char*> kDTypeNames[] = {
    {DType::Float32, "F32"}, {DType::Float64, "F64"}, {DType::BFloat16, "BF16"}, {DType::Float16, "F16"},
    {DType::Int32, "I32"},   {DType::Int64, "I64"},   {DType::UInt8, "U8"},      {DType::Bool, "BOOL"}};

const char* safetensors_name(DType t) {
  for (const auto& [dtype, name] : kDTypeNames)
    if (dtype == t) return name;
  MOH_FAIL("save_safetensors: no safetensors name for dtype ", dtype_name(t));
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

struct Header {
  std::vector<Entry> entries;
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // file offset of the data buffer
};

Entry parse_entry(const std::string& where, const std::string& name, const Json& j) {
  const std::string what = where + " tensor '" + name + "'";
  MOH_CHECK(j.is_object(), what, ": expected an object with dtype, shape and data_offsets, got ", j.dump());
  MOH_CHECK(j.contains("dtype") && j["dtype"].is_string(), what, ": missing or non-string \"dtype\"");
  const std::string dt = j["dtype"].get<std::string>();
  const auto* found = std::find_if(std::begin(kDTypeNames), std::end(kDTypeNames),
                                   [&](const auto& p) { return dt == p.second; });
  MOH_CHECK(found != std::end(kDTypeNames), what, ": unsupported dtype '", dt,
            "' (expected F32, F64, BF16, F16, I32, I64, U8 or BOOL)");
  Entry e{name, found->first, {}, 0, 0};
  MOH_CHECK(j.contains("shape") && j["shape"].is_array(), what, ": missing or non-array \"shape\"");
  uint64_t numel = 1;
  bool overflow = false, has_zero = false;
  for (const Json& s : j["shape"]) {
    MOH_CHECK(s.is_number_unsigned(), what, ": shape entries must be non-negative integers, got ", j["shape"].dump());
    const uint64_t v = s.get<uint64_t>();
    MOH_CHECK(v <= uint64_t(std::numeric_limits<int64_t>::max()), what, ": shape entry ", v, " is too large");
    has_zero = has_zero || v == 0;
    if (v != 0 && numel > uint64_t(std::numeric_limits<int64_t>::max()) / 8 / v) overflow = true;
    else numel *= v;
    e.shape.push_back(int64_t(v));
  }
  MOH_CHECK(!overflow || has_zero, what, ": shape ", j["shape"].dump(), " is too large");
  if (has_zero) numel = 0;
  const Json& off = j.contains("data_offsets") ? j["data_offsets"] : Json();
  MOH_CHECK(off.is_array() && off.size() == 2 && off[0].is_number_unsigned() && off[1].is_number_unsigned(), what,
            ": \"data_offsets\" must be [begin, end] with non-negative integers, got ", off.dump());
  e.begin = off[0].get<uint64_t>();
  e.end = off[1].get<uint64_t>();
  MOH_CHECK(e.begin <= e.end, what, ": data_offsets [", e.begin, ", ", e.end, "] end before they begin");
  const uint64_t nbytes = numel * dtype_size(e.dtype);
  MOH_CHECK(e.end - e.begin == nbytes, what, ": data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin,
            " bytes but dtype ", dt, " and shape ", shape_str(e.shape), " need ", nbytes);
  return e;
}

Header read_header(int fd, const std::string& where) {
  struct stat st {};
  MOH_CHECK(::fstat(fd, &st) == 0, where, ": cannot stat: ", std::strerror(errno));
  MOH_CHECK(S_ISREG(st.st_mode), where, ": not a regular file");
  const uint64_t file_size = uint64_t(st.st_size);
  uint64_t n = 0;
  MOH_CHECK(file_size >= 8 && read_at(fd, &n, 8, 0), where, ": truncated file (", file_size,
            " bytes) has no 8-byte header length");
  MOH_CHECK(n <= file_size - 8, where, ": header length ", n, " runs past the end of the file (", file_size,
            " bytes)");
  std::string text(n, '\0');
  MOH_CHECK(read_at(fd, text.data(), n, 8), where, ": cannot read the ", n, "-byte header");
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    MOH_FAIL(where, ": header is not valid JSON: ", e.what());
  }
  MOH_CHECK(j.is_object(), where, ": header must be a JSON object, got ", j.type_name());

  Header h;
  h.data_start = 8 + n;
  const uint64_t data_size = file_size - h.data_start;
  for (const auto& [key, value] : j.items()) {
    if (key == "__metadata__") {
      MOH_CHECK(value.is_object(), where, ": \"__metadata__\" must be an object of strings");
      for (const auto& [mk, mv] : value.items()) {
        MOH_CHECK(mv.is_string(), where, ": metadata '", mk, "' must be a string, got ", mv.dump());
        h.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    Entry e = parse_entry(where, key, value);
    MOH_CHECK(e.end <= data_size, where, " tensor '", key, "': data_offsets [", e.begin, ", ", e.end,
              "] run past the ", data_size, "-byte data buffer");
    h.entries.push_back(std::move(e));
  }
  // The buffer must be covered exactly: sorted by offset, each tensor starts where the last ended.
  std::vector<const Entry*> order;
  for (const Entry& e : h.entries) order.push_back(&e);
  std::sort(order.begin(), order.end(),
            [](const Entry* a, const Entry* b) { return std::tie(a->begin, a->end) < std::tie(b->begin, b->end); });
  uint64_t at = 0;
  const Entry* prev = nullptr;
  for (const Entry* e : order) {
    MOH_CHECK(e->begin >= at, where, " tensor '", e->name, "': data_offsets [", e->begin, ", ", e->end,
              "] overlap tensor '", prev ? prev->name : "", "'");
    MOH_CHECK(e->begin == at, where, " tensor '", e->name, "': data_offsets [", e->begin, ", ", e->end,
              "] leave a hole of ", e->begin - at, " bytes before them");
    at = e->end;
    prev = e;
  }
  MOH_CHECK(at == data_size, where, ": ", data_size - at, " bytes after the last tensor are not part of any tensor");
  return h;
}

int open_for_reading(const std::string& path, const char* op) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  MOH_CHECK(fd >= 0, op, ": cannot open '", path, "': ", std::strerror(errno));
  return fd;
}

void write_all(int fd, const void* src, size_t n, const std::string& where) {
  const char* p = static_cast<const char*>(src);
  while (n > 0) {
    const ssize_t put = ::write(fd, p, std::min<size_t>(n, 1u << 30));
    if (put < 0 && errno == EINTR) continue;
    MOH_CHECK(put > 0, where, ": write failed: ", std::strerror(errno));
    p += put;
    n -= size_t(put);
  }
}

}  // namespace

std::map<std::string, Tensor> load_safetensors(const std::string& path) {
  const std::string where = "load_safetensors: '" + path + "'";
  Fd fd(open_for_reading(path, "load_safetensors"));
  const Header h = read_header(fd.fd, where);
  std::map<std::string, Tensor> out;
  for (const Entry& e : h.entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    MOH_CHECK(read_at(fd.fd, t.raw_data(), t.nbytes(), h.data_start + e.begin), where, " tensor '", e.name,
              "': cannot read its ", t.nbytes(), " bytes");
    if (e.dtype == DType::Bool) {
      const auto* b = static_cast<const uint8_t*>(t.raw_data());
      const auto* bad = std::find_if(b, b + t.numel(), [](uint8_t v) { return v > 1; });
      MOH_CHECK(bad == b + t.numel(), where, " tensor '", e.name, "': BOOL element ", bad - b, " has byte value ",
                int(*bad), " (expected 0 or 1)");
    }
    out.emplace(e.name, std::move(t));
  }
  return out;
}

std::map<std::string, std::string> load_safetensors_metadata(const std::string& path) {
  Fd fd(open_for_reading(path, "load_safetensors_metadata"));
  return read_header(fd.fd, "load_safetensors_metadata: '" + path + "'").metadata;
}

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const std::string where = "save_safetensors: '" + path + "'";
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<Tensor> data;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    MOH_CHECK(!name.empty() && name != "__metadata__", where, ": invalid tensor name '", name, "'");
    MOH_CHECK(t.defined(), where, " tensor '", name, "' is undefined");
    Tensor c = t.to(Device::cpu()).contiguous();
    header[name] = {{"dtype", safetensors_name(c.dtype())},
                    {"shape", c.shape()},
                    {"data_offsets", {offset, offset + c.nbytes()}}};
    offset += c.nbytes();
    data.push_back(std::move(c));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data buffer 8-byte aligned
  const uint64_t n = text.size();

  const std::string tmp = path + ".tmp";
  try {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    MOH_CHECK(fd.fd >= 0, where, ": cannot create '", tmp, "': ", std::strerror(errno));
    write_all(fd.fd, &n, 8, where);
    write_all(fd.fd, text.data(), text.size(), where);
    for (const Tensor& c : data) write_all(fd.fd, c.raw_data(), c.nbytes(), where);
    MOH_CHECK(::fsync(fd.fd) == 0, where, ": fsync failed: ", std::strerror(errno));
    const int rc = ::close(fd.fd);
    fd.fd = -1;
    MOH_CHECK(rc == 0, where, ": close failed: ", std::strerror(errno));
    MOH_CHECK(::rename(tmp.c_str(), path.c_str()) == 0, where, ": cannot rename '", tmp, "' over it: ",
              std::strerror(errno));
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  // Persist the rename itself.
  std::string dir = std::filesystem::path(path).parent_path().string();
  Fd dfd(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.fd >= 0) ::fsync(dfd.fd);
}

}  // namespace moh
