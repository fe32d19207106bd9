// WarningChannel: where a task's data pipeline reports recoverable problems (a skipped unreadable
// image) from any thread. Until a sink is connected (the trainer connects its run log for the run's
// lifetime) messages go to stderr as "warning: <message>". Thread-safe; the sink is called under the
// channel's lock, so messages never interleave.
#pragma once

#include <functional>
#include <iostream>
#include <mutex>
#include <string>

namespace moh {

class WarningChannel {
 public:
  using Sink = std::function<void(const std::string&)>;

  // nullptr: back to stderr.
  void connect(Sink sink) {
    std::lock_guard<std::mutex> guard(mu_);
    sink_ = std::move(sink);
  }

  void warn(const std::string& message) const {
    std::lock_guard<std::mutex> guard(mu_);
    if (sink_) sink_(message);
    else std::cerr << "warning: " << message << std::endl;
  }

 private:
  mutable std::mutex mu_;
  Sink sink_;
};

}  // namespace moh
