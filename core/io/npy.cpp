// .npy reading and writing (see npy.h). The header is parsed by a small recursive-descent reader of the
// Python literals NumPy writes (strings, True/False, tuples of integers); anything else is an error.
// Files are read with pread straight into the tensor's storage. Little-endian hosts only.
#include "core/io/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>

#include "core/io/checked_write.h"
#include "core/io/file_descriptor.h"

namespace moh {
namespace {

static_assert(std::endian::native == std::endian::little, ".npy I/O assumes a little-endian host");

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kPreambleV1 = 10, kPreambleV2 = 12;  // magic + version + header length

struct Descr {
  DType dtype;
  const char* code;  // kind and size, after the byte-order character
};
constexpr Descr kDescrs[] = {{DType::Float32, "f4"}, {DType::Float64, "f8"}, {DType::Float16, "f2"},
                             {DType::Int32, "i4"},   {DType::Int64, "i8"},   {DType::UInt8, "u1"},
                             {DType::Bool, "b1"}};

// Reads the header dict; `where` prefixes every error.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string where) : text_(text), where_(std::move(where)) {}

  NpyHeader parse() {
    std::optional<std::string> descr;
    std::optional<bool> fortran;
    std::optional<Shape> shape;
    skip_space();
    expect('{');
    for (;;) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string_literal("a key");
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr") {
        check_once(descr.has_value(), key);
        MOH_CHECK(peek() == '\'' || peek() == '"', where_,
                  ": 'descr' is not a string (structured dtypes are not supported)");
        descr = string_literal("the descr");
      } else if (key == "fortran_order") {
        check_once(fortran.has_value(), key);
        fortran = boolean();
      } else if (key == "shape") {
        check_once(shape.has_value(), key);
        shape = tuple();
      } else {
        MOH_FAIL(where_, ": unknown header key '", key, "' (expected 'descr', 'fortran_order' and 'shape')");
      }
      skip_space();
      if (peek() != ',') break;
      ++at_;
    }
    skip_space();
    expect('}');
    skip_space();
    MOH_CHECK(at_ == text_.size(), where_, ": unexpected text after the header dict at byte ", at_);
    MOH_CHECK(!text_.empty() && text_.back() == '\n', where_, ": the header does not end with a newline");
    MOH_CHECK(descr && fortran && shape, where_, ": the header lacks ",
              !descr     ? "'descr'"
              : !fortran ? "'fortran_order'"
                         : "'shape'");
    NpyHeader h;
    h.fortran_order = *fortran;
    h.shape = *shape;
    read_descr(*descr, &h);
    return h;
  }

 private:
  char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }
  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n')) ++at_;
  }
  void expect(char c) {
    MOH_CHECK(peek() == c, where_, ": malformed header: expected '", c, "' at byte ", at_, " of the header");
    ++at_;
  }
  void check_once(bool seen, const std::string& key) const {
    MOH_CHECK(!seen, where_, ": header key '", key, "' appears twice");
  }
  std::string string_literal(const char* what) {
    const char quote = peek();
    MOH_CHECK(quote == '\'' || quote == '"', where_, ": malformed header: expected ", what,
              " (a quoted string) at byte ", at_);
    const size_t end = text_.find(quote, at_ + 1);
    MOH_CHECK(end != std::string_view::npos, where_, ": malformed header: unterminated string at byte ", at_);
    std::string out(text_.substr(at_ + 1, end - at_ - 1));
    MOH_CHECK(out.find('\\') == std::string::npos, where_, ": malformed header: escapes in strings are not supported");
    at_ = end + 1;
    return out;
  }
  bool boolean() {
    for (const std::string_view word : {"True", "False"})
      if (text_.substr(at_, word.size()) == word) {
        at_ += word.size();
        return word == "True";
      }
    MOH_FAIL(where_, ": 'fortran_order' is not True or False");
  }
  int64_t integer() {
    MOH_CHECK(std::isdigit(static_cast<unsigned char>(peek())), where_, ": 'shape' holds a non-integer at byte ", at_);
    int64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      const int64_t digit = text_[at_++] - '0';
      MOH_CHECK(v <= (std::numeric_limits<int64_t>::max() - digit) / 10, where_,
                ": a 'shape' dimension overflows int64");
      v = v * 10 + digit;
    }
    if (peek() == 'L') ++at_;  // Python 2 longs in files written by old NumPy
    return v;
  }
  Shape tuple() {
    MOH_CHECK(peek() == '(', where_, ": 'shape' is not a tuple");
    ++at_;
    Shape shape;
    bool trailing_comma = false;
    for (;;) {
      skip_space();
      if (peek() == ')') break;
      shape.push_back(integer());
      skip_space();
      trailing_comma = peek() == ',';
      if (!trailing_comma) break;
      ++at_;
    }
    skip_space();
    expect(')');
    MOH_CHECK(shape.size() != 1 || trailing_comma, where_, ": 'shape' (", shape[0],
              ") is an integer, not a tuple (write (", shape[0], ",))");
    return shape;
  }
  void read_descr(const std::string& descr, NpyHeader* h) const {
    const auto* found = descr.size() == 3 ? std::find_if(std::begin(kDescrs), std::end(kDescrs),
                                                         [&](const Descr& d) { return descr.substr(1) == d.code; })
                                          : std::end(kDescrs);
    const char order = descr.empty() ? '\0' : descr[0];
    MOH_CHECK(found != std::end(kDescrs) && (order == '<' || order == '>' || order == '=' || order == '|'), where_,
              ": unsupported descr '", descr, "' (supported: <f4 <f8 <f2 <i4 <i8 |u1 |b1, byte order < = | or >)");
    h->dtype = found->dtype;
    h->byte_swap = order == '>' && dtype_size(h->dtype) > 1;
    // Checked here so that data_bytes() cannot overflow.
    uint64_t bytes = dtype_size(h->dtype);
    for (int64_t d : h->shape) {
      MOH_CHECK(d == 0 || bytes <= (uint64_t(1) << 62) / uint64_t(d), where_, ": shape ", shape_str(h->shape),
                " is too large");
      bytes *= uint64_t(d);
    }
  }

  std::string_view text_;
  std::string where_;
  size_t at_ = 0;
};

uint64_t little_endian(const char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

// Bytes of preamble + header that `prefix` (at least kPreambleV2 bytes when there are that many) announces.
uint64_t announced_header_end(std::string_view prefix, const std::string& where) {
  MOH_CHECK(prefix.size() >= kPreambleV1 && prefix.substr(0, kMagic.size()) == kMagic, where,
            ": not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<uint8_t>(prefix[6]), minor = static_cast<uint8_t>(prefix[7]);
  MOH_CHECK((major == 1 || major == 2 || major == 3) && minor == 0, where, ": unsupported .npy version ", major, ".",
            minor, " (supported: 1.0, 2.0, 3.0)");
  if (major == 1) return kPreambleV1 + little_endian(prefix.data() + 8, 2);
  MOH_CHECK(prefix.size() >= kPreambleV2, where, ": truncated in its header length");
  const uint64_t length = little_endian(prefix.data() + 8, 4);
  MOH_CHECK(length <= kMaxNpyHeaderBytes, where, ": header length ", length, " exceeds the limit of ",
            kMaxNpyHeaderBytes, " bytes");
  return kPreambleV2 + length;
}

// The tensor of header h from its raw stored bytes (byte-swapped, transposed, checked as needed).
Tensor finish_array(Tensor raw, const NpyHeader& h, const std::string& where) {
  if (h.byte_swap) {
    const size_t size = dtype_size(h.dtype);
    auto* p = static_cast<uint8_t*>(raw.raw_data());
    for (int64_t i = 0; i < raw.numel(); ++i) std::reverse(p + i * size, p + (i + 1) * size);
  }
  if (h.dtype == DType::Bool) {
    const auto* b = static_cast<const uint8_t*>(raw.raw_data());
    const auto* bad = std::find_if(b, b + raw.numel(), [](uint8_t v) { return v > 1; });
    MOH_CHECK(bad == b + raw.numel(), where, ": bool element ", bad - b, " has byte value ", int(*bad),
              " (expected 0 or 1)");
  }
  if (!h.fortran_order || h.shape.size() < 2) return raw;
  std::vector<int64_t> reversed(h.shape.size());
  for (size_t i = 0; i < reversed.size(); ++i) reversed[i] = int64_t(reversed.size() - 1 - i);
  return raw.permute(reversed).contiguous();
}

// The shape the stored bytes have in C order (reversed for Fortran order).
Shape stored_shape(const NpyHeader& h) {
  Shape s = h.shape;
  if (h.fortran_order) std::reverse(s.begin(), s.end());
  return s;
}

void check_data_size(const NpyHeader& h, uint64_t available, const std::string& where) {
  MOH_CHECK(available == h.data_bytes(), where, ": ", available < h.data_bytes() ? "truncated" : "trailing bytes",
            ": expected ", h.data_bytes(), " data bytes for ", dtype_name(h.dtype), " shape ", shape_str(h.shape),
            ", the file holds ", available);
}

// An open .npy file with its header parsed and its size checked.
struct OpenNpy {
  Fd fd;
  NpyHeader header;
  std::string where;
};

void open_npy(const std::string& path, OpenNpy* out) {
  out->where = "file '" + path + "'";
  const std::string& where = out->where;
  out->fd.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  MOH_CHECK(out->fd.fd >= 0, where, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  MOH_CHECK(::fstat(out->fd.fd, &st) == 0 && S_ISREG(st.st_mode), where, ": not a regular file");
  const uint64_t size = uint64_t(st.st_size);
  std::string prefix(std::min<uint64_t>(size, kPreambleV2), '\0');
  MOH_CHECK(read_at(out->fd.fd, prefix.data(), prefix.size(), 0), where, ": cannot read: ", std::strerror(errno));
  const uint64_t header_end = announced_header_end(prefix, where);
  MOH_CHECK(header_end <= size, where, ": truncated: its header claims ", header_end, " bytes, the file holds ", size);
  prefix.resize(header_end);
  MOH_CHECK(read_at(out->fd.fd, prefix.data(), header_end, 0), where, ": cannot read its header");
  out->header = parse_npy_header(prefix, where);
  check_data_size(out->header, size - header_end, where);
}

}  // namespace

NpyHeader parse_npy_header(std::string_view bytes, const std::string& where) {
  const uint64_t header_end = announced_header_end(bytes, where);
  MOH_CHECK(header_end <= bytes.size(), where, ": truncated: its header claims ", header_end, " bytes, there are ",
            bytes.size());
  const size_t preamble = bytes[6] == 1 ? kPreambleV1 : kPreambleV2;
  NpyHeader h = HeaderParser(bytes.substr(preamble, header_end - preamble), where).parse();
  h.data_offset = header_end;
  return h;
}

Tensor parse_npy(std::string_view bytes, const std::string& where) {
  const NpyHeader h = parse_npy_header(bytes, where);
  check_data_size(h, bytes.size() - h.data_offset, where);
  Tensor raw = Tensor::empty(stored_shape(h), h.dtype);
  if (raw.nbytes() > 0) std::memcpy(raw.raw_data(), bytes.data() + h.data_offset, raw.nbytes());
  return finish_array(std::move(raw), h, where);
}

NpyHeader read_npy_header(const std::string& path) {
  OpenNpy f{Fd(-1), {}, {}};
  open_npy(path, &f);
  return f.header;
}

Tensor load_npy(const std::string& path) {
  OpenNpy f{Fd(-1), {}, {}};
  open_npy(path, &f);
  Tensor raw = Tensor::empty(stored_shape(f.header), f.header.dtype);
  MOH_CHECK(read_at(f.fd.fd, raw.raw_data(), raw.nbytes(), f.header.data_offset), f.where, ": cannot read its ",
            raw.nbytes(), " data bytes");
  return finish_array(std::move(raw), f.header, f.where);
}

std::string npy_header_bytes(const Tensor& t, const std::string& where) {
  MOH_CHECK(t.defined(), where, ": the tensor is undefined");
  const auto* found =
      std::find_if(std::begin(kDescrs), std::end(kDescrs), [&](const Descr& d) { return d.dtype == t.dtype(); });
  MOH_CHECK(found != std::end(kDescrs), where, ": ", dtype_name(t.dtype()), " has no NumPy dtype");
  const char order = dtype_size(t.dtype()) == 1 ? '|' : '<';
  std::string shape = "(";
  for (int64_t d : t.shape()) shape += std::to_string(d) + ", ";
  if (t.dim() > 1)
    shape.resize(shape.size() - 2);
  else if (t.dim() == 1)
    shape.pop_back();
  shape += ")";
  std::string dict = str_cat("{'descr': '", order, found->code, "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Pad with spaces so that preamble + header + '\n' is a multiple of 64 (NumPy's alignment).
  auto padding = [&](size_t preamble) { return (64 - (preamble + dict.size() + 1) % 64) % 64; };
  const bool v2 = dict.size() + 1 + padding(kPreambleV1) > 65535;
  const size_t preamble = v2 ? kPreambleV2 : kPreambleV1;
  dict.append(padding(preamble), ' ');
  dict += '\n';
  std::string out(kMagic);
  out += char(v2 ? 2 : 1);
  out += '\0';
  for (size_t i = 0; i < preamble - kPreambleV1 + 2; ++i) out += char((dict.size() >> (8 * i)) & 0xff);
  return out + dict;
}

void save_npy(const std::string& path, const Tensor& t) {
  const std::string header = npy_header_bytes(t, "save_npy '" + path + "'");
  const Tensor c = t.to(Device::cpu()).contiguous();
  AtomicFileWriter out(path);
  out.write(header);
  out.write(c.raw_data(), c.nbytes());
  out.commit();
}

}  // namespace moh
