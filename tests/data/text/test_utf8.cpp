// utf8_complete_prefix: what a streaming printer may write now. A character cut anywhere inside
// is held back whole (2-, 3- and 4-byte ones), complete text and invalid bytes are not.
#include <gtest/gtest.h>

#include <string>

#include "data/text/utf8.h"

namespace moh::text {
namespace {

TEST(Utf8CompletePrefix, HoldsBackOnlyACharacterCutInTwo) {
  EXPECT_EQ(utf8_complete_prefix(""), 0u);
  EXPECT_EQ(utf8_complete_prefix("abc"), 3u);
  for (const std::string ch : {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"}) {  // é € 😀
    const std::string text = "ab" + ch;
    EXPECT_EQ(utf8_complete_prefix(text), text.size()) << "complete";
    for (size_t cut = 1; cut < ch.size(); ++cut)
      EXPECT_EQ(utf8_complete_prefix(text.substr(0, 2 + cut)), 2u) << ch.size() << "-byte character cut after " << cut;
  }
}

TEST(Utf8CompletePrefix, InvalidBytesAreNotHeldBack) {
  EXPECT_EQ(utf8_complete_prefix("a\x80"), 2u);          // a lone continuation byte
  EXPECT_EQ(utf8_complete_prefix("a\xE0\x80"), 3u);      // E0 80 is overlong: it can never complete
  EXPECT_EQ(utf8_complete_prefix("a\xED\xA0"), 3u);      // a surrogate
  EXPECT_EQ(utf8_complete_prefix("a\xF5"), 2u);          // no such lead byte
  EXPECT_EQ(utf8_complete_prefix("a\xC3\x41"), 3u);      // a lead followed by ASCII
  EXPECT_EQ(utf8_complete_prefix("\xF0\x9F\x98"), 0u);   // nothing printable yet
}

}  // namespace
}  // namespace moh::text
