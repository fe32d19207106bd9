// Helpers for the text tests: the committed tokenizer fixtures (tests/reference/fixtures/text, made by
// tests/reference/make_text_fixtures.js), loaded once per process.
#pragma once

#include <string>

#include "data/text/tokenizer.h"
#include "tests/test_paths.h"

namespace moh::test {

inline std::string text_fixture(const std::string& name) {
  return MOH_TEST_PATH(MOH_FIXTURE_DIR) + "/text/" + name;
}

// r50k_base or cl100k_base from its committed ranks file.
const text::Tokenizer& fixture_tokenizer(const std::string& encoding);

}  // namespace moh::test
