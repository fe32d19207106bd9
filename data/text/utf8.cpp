// UTF-8 well-formedness (see utf8.h); the table of valid second bytes is Unicode's Table 3-7.
#include "data/text/utf8.h"

#include <cstdint>

namespace moh::text {
namespace {

// What a lead byte announces: the sequence length (0: not a lead byte) and its second byte's range.
struct Lead {
  size_t length = 0;
  uint8_t low = 0x80, high = 0xBF;
};

Lead lead_of(uint8_t lead) {
  if (lead < 0x80) return {1};
  if (lead >= 0xC2 && lead <= 0xDF) return {2};
  if (lead >= 0xE0 && lead <= 0xEF)
    return {3, uint8_t(lead == 0xE0 ? 0xA0 : 0x80),   // overlong below U+0800
            uint8_t(lead == 0xED ? 0x9F : 0xBF)};      // surrogates
  if (lead >= 0xF0 && lead <= 0xF4)
    return {4, uint8_t(lead == 0xF0 ? 0x90 : 0x80),   // overlong below U+10000
            uint8_t(lead == 0xF4 ? 0x8F : 0xBF)};      // above U+10FFFF
  return {};
}

// Whether bytes [at + 1, end) are a well-formed continuation of `lead` so far.
bool continues(std::string_view text, size_t at, size_t end, const Lead& lead) {
  for (size_t k = at + 1; k < end; ++k) {
    const uint8_t b = uint8_t(text[k]);
    if (k == at + 1 ? (b < lead.low || b > lead.high) : (b & 0xC0) != 0x80) return false;
  }
  return true;
}

}  // namespace

size_t utf8_sequence_length(std::string_view text, size_t at) {
  const Lead lead = lead_of(uint8_t(text[at]));
  if (lead.length == 0 || at + lead.length > text.size()) return 0;
  return continues(text, at, at + lead.length, lead) ? lead.length : 0;
}

size_t valid_utf8_run(std::string_view text, size_t at) {
  size_t end = at;
  while (end < text.size()) {
    if (uint8_t(text[end]) < 0x80) {  // ASCII fast path
      ++end;
      continue;
    }
    const size_t length = utf8_sequence_length(text, end);
    if (length == 0) break;
    end += length;
  }
  return end - at;
}

size_t utf8_complete_prefix(std::string_view text) {
  const size_t n = text.size();
  for (size_t at = n > 3 ? n - 3 : 0; at < n; ++at) {
    const Lead lead = lead_of(uint8_t(text[at]));
    if (lead.length > n - at && continues(text, at, n, lead)) return at;
  }
  return n;
}

}  // namespace moh::text
