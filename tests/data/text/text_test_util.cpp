// The shared fixture tokenizers of the text tests (see text_test_util.h).
#include "tests/data/text/text_test_util.h"

#include <map>
#include <memory>
#include <mutex>

namespace moh::test {

const text::Tokenizer& fixture_tokenizer(const std::string& encoding) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<text::Tokenizer>> loaded;
  std::lock_guard lock(mutex);
  auto& slot = loaded[encoding];
  if (!slot) slot = text::load_tokenizer(text_fixture(encoding + ".tiktoken.gz"));
  return *slot;
}

}  // namespace moh::test
