// Fuzz target: arbitrary corpus text (data/text/corpus_tokenizer.h reads any bytes a user's files
// hold) through a byte-level BPE tokenizer with GPT-2's split pattern: encoding must not fail on any
// bytes (invalid UTF-8, NULs, long runs) and decode(encode_ordinary(x)) must give x back exactly;
// encode with every special token allowed must not crash.
#include <cstdlib>

#include "data/text/split_pattern.h"
#include "data/text/tiktoken_tokenizer.h"
#include "fuzz/fuzz_target.h"

namespace {

const moh::text::TiktokenTokenizer& tokenizer() {
  static const moh::text::TiktokenTokenizer t = [] {
    std::vector<std::pair<std::string, moh::text::TokenId>> ranks;
    for (int b = 0; b < 256; ++b) ranks.emplace_back(std::string(1, char(b)), b);
    for (const char* merge : {" t", "th", "he", " the", "in", "an", "nd", " and", "\xc3\xbc", "  ", "11"})
      ranks.emplace_back(merge, moh::text::TokenId(ranks.size()));
    return moh::text::TiktokenTokenizer(std::move(ranks), moh::text::kGpt2SplitPattern,
                                        {{"<|endoftext|>", moh::text::TokenId(ranks.size())}}, "fuzz tokenizer");
  }();
  return t;
}

void read(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<moh::text::TokenId> ids = tokenizer().encode_ordinary(text);
  if (tokenizer().decode(ids) != text) std::abort();  // a round trip that loses bytes is a finding
  try {
    tokenizer().encode(text, moh::text::AllowedSpecial::all());
  } catch (const moh::Error&) {
  }
}

void seeds(const moh::fuzz::AddSeed& add) {
  auto text = [&](const std::string& name, const std::string& s) { add(name, moh::fuzz::Bytes(s.begin(), s.end())); };
  text("kjv.txt", "In the beginning God created the heaven and the earth.\n\n1:2 And the earth was without form");
  text("unicode.txt", "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80 e\xcc\x81 \xc3\xbc\xc3\xbc");
  text("invalid_utf8.txt", std::string("ab\xff\xfe\xc3 \x80\x80 \xed\xa0\x80 z\0y", 22));
  text("runs.txt", std::string(300, ' ') + std::string(200, '9') + "\n\n\n\t\t" + std::string(100, 'a'));
  text("special.txt", "one<|endoftext|>two <|endoftext|><|endof");
}

}  // namespace

MOH_FUZZ_TARGET(read, seeds)
