// moh::Error, the one exception type for user-facing failures (bad shapes, dtypes, devices,
// files, config). Messages name the op or key, what was given and what was expected.
// MOH_CHECK(cond, parts...) throws Error with the parts streamed together; never use assert
// on user input.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace moh {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <class... Parts>
std::string str_cat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

}  // namespace moh

#define MOH_CHECK(cond, ...)                                  \
  do {                                                        \
    if (!(cond)) throw ::moh::Error(::moh::str_cat(__VA_ARGS__)); \
  } while (0)

#define MOH_FAIL(...) throw ::moh::Error(::moh::str_cat(__VA_ARGS__))
