// UTF-8 well-formedness (see utf8.h); the table of valid second bytes is Unicode's Table 3-7.
#include "data/text/utf8.h"

#include <cstdint>

namespace moh::text {

size_t utf8_sequence_length(std::string_view text, size_t at) {
  const auto byte = [&](size_t k) { return uint8_t(text[at + k]); };
  const uint8_t lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length;
  uint8_t low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong below U+0800
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong below U+10000
    if (lead == 0xF4) high = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (size_t k = 2; k < length; ++k)
    if ((byte(k) & 0xC0) != 0x80) return 0;
  return length;
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

}  // namespace moh::text
