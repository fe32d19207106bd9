// ProgressLine: the progress display of the long-running CLI commands (moh tokenize, encode, decode) on
// stderr: "<label> [#####.....] done/total <unit><detail>", redrawn in place on a terminal at most five
// times a second, or printed as a new line every five seconds when stderr is a file or pipe; the final
// update (done == total) always prints and ends the line.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

#include <unistd.h>

namespace moh::cli {

// `value` with `digits` decimals ("12.3"), for progress details.
inline std::string format_fixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

class ProgressLine {
 public:
  ProgressLine(std::string label, int64_t total, std::string unit)
      : label_(std::move(label)), unit_(std::move(unit)), total_(total), tty_(isatty(STDERR_FILENO) != 0) {}

  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

  void update(int64_t done, const std::string& detail = "") {
    const bool finished = done >= total_;
    const double now = seconds();
    if (!finished && last_ >= 0 && now - last_ < (tty_ ? 0.2 : 5.0)) return;
    last_ = now;
    constexpr int kWidth = 30;
    const int filled = total_ > 0 ? int(kWidth * std::min(done, total_) / total_) : kWidth;
    std::fprintf(stderr, "%s%s [%s%s] %lld/%lld %s%s%s", tty_ ? "\r" : "", label_.c_str(),
                 std::string(size_t(filled), '#').c_str(), std::string(size_t(kWidth - filled), '.').c_str(),
                 (long long)done, (long long)total_, unit_.c_str(), detail.c_str(), tty_ && !finished ? "\033[K" : "\n");
    std::fflush(stderr);
  }

 private:
  std::string label_, unit_;
  int64_t total_;
  bool tty_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double last_ = -1;
};

}  // namespace moh::cli
