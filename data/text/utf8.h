// UTF-8 validity as the tokenizers need it: the length of the well-formed sequence at a position,
// by the Unicode definition (no overlong forms, no surrogates U+D800..U+DFFF, nothing above
// U+10FFFF). Text handed to the PCRE2 split patterns is always cut to valid runs with this first;
// text streamed out piece by piece (moh generate) is held back at a character cut in two.
#pragma once

#include <cstddef>
#include <string_view>

namespace moh::text {

// 1..4 when text[at] starts a well-formed sequence of that many bytes, 0 when it does not.
size_t utf8_sequence_length(std::string_view text, size_t at);

// The length of the longest well-formed prefix of text.substr(at), counted from `at`.
size_t valid_utf8_run(std::string_view text, size_t at);

// The length of text without a trailing sequence that is well-formed so far but incomplete (a
// character whose last bytes have not arrived yet); text.size() when it ends on no such sequence.
// Invalid bytes are not held back: they never complete.
size_t utf8_complete_prefix(std::string_view text);

}  // namespace moh::text
