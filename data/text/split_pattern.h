// SplitPattern: the pre-tokenizer regex of a byte-level BPE (GPT-2's, cl100k's, o200k's, or a
// tokenizer.json's), compiled with PCRE2 in UTF + Unicode-property mode and JIT. split() cuts text
// into pieces exactly as tiktoken's findall does (leftmost-first alternation, lookahead), with two
// rules of moh's own: bytes that are not well-formed UTF-8 become one-byte pieces of their own (the
// valid runs between them are split independently, as separate texts), and text the pattern does not
// match is kept as a piece rather than dropped, so pieces always tile the input.
// \s and \S mean Unicode White_Space as in Rust's regex crate (tiktoken's engine): PCRE2's \s also
// matches U+180E, so the pattern is rewritten with the explicit set. \p{L} and \p{N} follow PCRE2's
// Unicode tables (10.42: Unicode 14), which can differ from tiktoken's for characters assigned later.
// Thread-safe: split() allocates its own match data.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moh::text {

struct Piece {
  uint32_t begin, end;  // byte offsets into the split text
};

class SplitPattern {
 public:
  // `what` names the pattern's source in errors (a file, an encoding).
  SplitPattern(std::string pattern, std::string what);
  ~SplitPattern();
  SplitPattern(const SplitPattern&) = delete;
  SplitPattern& operator=(const SplitPattern&) = delete;

  // Appends the pieces of `text` (up to 4 GiB) to `out`.
  void split(std::string_view text, std::vector<Piece>& out) const;
  const std::string& pattern() const { return pattern_; }

 private:
  void split_valid(std::string_view text, uint32_t base, std::vector<Piece>& out) const;

  std::string pattern_, what_;
  void* code_ = nullptr;  // pcre2_code_8
};

// The split patterns of OpenAI's encodings (tiktoken's pat_str).
extern const char* const kGpt2SplitPattern;    // gpt2, r50k_base, p50k_base
extern const char* const kCl100kSplitPattern;  // cl100k_base, LLaMA-3
extern const char* const kO200kSplitPattern;   // o200k_base

}  // namespace moh::text
