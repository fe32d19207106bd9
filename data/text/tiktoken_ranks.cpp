// Parsing the tiktoken ranks format (see tiktoken_ranks.h).
#include "data/text/tiktoken_ranks.h"

#include <charconv>

#include "core/error.h"

namespace moh::text {
namespace {

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool parse_line(std::string_view line, std::string& bytes, TokenId& rank) {
  const size_t space = line.find(' ');
  if (space == std::string_view::npos) return false;
  const std::string_view digits = line.substr(space + 1);
  if (digits.empty()) return false;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
  return ec == std::errc() && end == digits.data() + digits.size() && rank >= 0 &&
         decode_base64(line.substr(0, space), bytes);
}

}  // namespace

bool decode_base64(std::string_view in, std::string& out) {
  out.clear();
  if (in.empty() || in.size() % 4 != 0) return false;
  size_t padding = 0;
  while (padding < 2 && in[in.size() - 1 - padding] == '=') ++padding;
  uint32_t bits = 0;
  int count = 0;
  for (size_t i = 0; i < in.size() - padding; ++i) {
    const int v = base64_value(in[i]);
    if (v < 0) return false;
    bits = (bits << 6) | uint32_t(v);
    if (++count == 4) {
      out += char(bits >> 16);
      out += char(bits >> 8);
      out += char(bits);
      bits = 0;
      count = 0;
    }
  }
  if (count == 1) return false;
  if (count == 2) {
    out += char(bits >> 4);
  } else if (count == 3) {
    out += char(bits >> 10);
    out += char(bits >> 2);
  }
  return true;
}

std::vector<std::pair<std::string, TokenId>> parse_tiktoken_ranks(std::string_view text, const std::string& what) {
  std::vector<std::pair<std::string, TokenId>> ranks;
  size_t at = 0, line_number = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    ++line_number;
    std::string_view line = text.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string bytes;
    TokenId rank = 0;
    MOH_CHECK(parse_line(line, bytes, rank), what, ":", line_number,
              ": not a tiktoken ranks line (expected '<base64 token> <rank>', got '",
              line.substr(0, 80), line.size() > 80 ? "...'" : "'", ")");
    ranks.emplace_back(std::move(bytes), rank);
    at = end + 1;
  }
  MOH_CHECK(!ranks.empty(), what, ": empty tiktoken ranks file");
  return ranks;
}

bool looks_like_tiktoken_ranks(std::string_view text) {
  std::string bytes;
  TokenId rank = 0;
  const size_t end = text.find('\n');
  std::string_view line = text.substr(0, end);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return parse_line(line, bytes, rank);
}

}  // namespace moh::text
