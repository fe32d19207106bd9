// The tiktoken ranks format (`cl100k_base.tiktoken`, LLaMA-3's `tokenizer.model`): one token per
// line, "<base64 of the token's bytes> <rank>", ranks decimal. Blank lines are not allowed except a
// final newline. The OpenAI encodings are recognised by their rank count (tiktoken_tokenizer.h).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/text/byte_pair_encoder.h"

namespace moh::text {

// Parses ranks text; `what` (the file) and the line number name any malformed line.
std::vector<std::pair<std::string, TokenId>> parse_tiktoken_ranks(std::string_view text, const std::string& what);

// True when `text` looks like a ranks file (its first line is "<base64> <digits>").
bool looks_like_tiktoken_ranks(std::string_view text);

// Standard base64 (RFC 4648, '=' padding) into `out`; false when malformed.
bool decode_base64(std::string_view in, std::string& out);

}  // namespace moh::text
