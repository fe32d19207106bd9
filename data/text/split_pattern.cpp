// PCRE2 pre-tokenizer splitting (see split_pattern.h).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "data/text/split_pattern.h"

#include <pcre2.h>

#include <memory>

#include "core/error.h"
#include "data/text/utf8.h"

namespace moh::text {

const char* const kGpt2SplitPattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char* const kCl100kSplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kO200kSplitPattern =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

namespace {

// Unicode's White_Space property, what \s means to Rust's regex crate (tiktoken's engine). PCRE2's
// \s in UCP mode also matches U+180E (Mongolian vowel separator), so \s and \S are spelled out.
constexpr const char* kWhiteSpaceItems = R"(\x{9}-\x{d}\x{20}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000})";

// \s -> the White_Space items (bracketed outside a class); \S -> their negated class (refused inside
// a class, where it cannot be written as a list of items).
std::string with_unicode_white_space(const std::string& pattern, const std::string& what) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[++i];
      if (next == 's') {
        out += in_class ? std::string(kWhiteSpaceItems) : str_cat("[", kWhiteSpaceItems, "]");
      } else if (next == 'S') {
        MOH_CHECK(!in_class, what, ": split pattern uses \\S inside a character class, which moh cannot map to "
                  "Unicode White_Space");
        out += str_cat("[^", kWhiteSpaceItems, "]");
      } else {
        out += c;
        out += next;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];  // a literal ] first
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

}  // namespace

SplitPattern::SplitPattern(std::string pattern, std::string what) : pattern_(std::move(pattern)), what_(std::move(what)) {
  const std::string rewritten = with_unicode_white_space(pattern_, what_);
  int error = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    MOH_FAIL(what_, ": split pattern does not compile at offset ", error_offset, ": ",
             reinterpret_cast<const char*>(message), " (pattern: ", pattern_, ")");
  }
  // JIT when available; pcre2_match falls back to the interpreter otherwise.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  code_ = code;
}

SplitPattern::~SplitPattern() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void SplitPattern::split(std::string_view text, std::vector<Piece>& out) const {
  MOH_CHECK(text.size() < (uint64_t(1) << 32), what_, ": cannot split ", text.size(), " bytes at once (limit 4 GiB)");
  size_t at = 0;
  while (at < text.size()) {
    const size_t run = valid_utf8_run(text, at);
    if (run > 0) split_valid(text.substr(at, run), uint32_t(at), out);
    at += run;
    if (at < text.size()) {  // a byte that starts no well-formed sequence
      out.push_back({uint32_t(at), uint32_t(at + 1)});
      ++at;
    }
  }
}

void SplitPattern::split_valid(std::string_view text, uint32_t base, std::vector<Piece>& out) const {
  const auto* code = static_cast<const pcre2_code*>(code_);
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> match(pcre2_match_data_create_from_pattern(code, nullptr));
  MOH_CHECK(match, what_, ": out of memory for PCRE2 match data");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t at = 0;
  while (at < text.size()) {
    const int rc = pcre2_match(code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, match.get(), nullptr);
    size_t begin = text.size(), end = text.size();
    if (rc >= 0) {
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
      begin = ovector[0];
      end = ovector[1];
    } else if (rc != PCRE2_ERROR_NOMATCH) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      MOH_FAIL(what_, ": split pattern failed at byte ", base + at, ": ", reinterpret_cast<const char*>(message));
    }
    if (begin > at) out.push_back({uint32_t(base + at), uint32_t(base + begin)});  // unmatched text
    if (end == begin) {  // empty match (a custom pattern): step over one character, kept as a piece
      if (begin >= text.size()) break;
      end = begin + utf8_sequence_length(text, begin);
    }
    out.push_back({uint32_t(base + begin), uint32_t(base + end)});
    at = end;
  }
}

}  // namespace moh::text
