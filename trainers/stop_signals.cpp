// The stop-signal handlers of a run (see stop_signals.h).
#include "trainers/stop_signals.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <iterator>

namespace moh {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGUSR1};
static_assert(std::size(kSignals) == 3, "StopSignals::previous_ holds one handler per signal");

std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_alive{0};  // StopSignals objects alive (they nest)

void write_stderr(const char* text) {
  for (size_t n = std::strlen(text); n > 0;) {
    const ssize_t w = ::write(STDERR_FILENO, text, n);
    if (w <= 0) return;
    text += w;
    n -= size_t(w);
  }
}

// Only async-signal-safe calls.
extern "C" void on_stop_signal(int signal) {
  const bool again = g_stop_requested.exchange(true);
  if (signal != SIGINT) return;
  if (again) {
    write_stderr("\nmoh: second interrupt: exiting now without a checkpoint\n");
    _exit(130);
  }
  write_stderr("\nmoh: interrupt: stopping after this step with a checkpoint (interrupt again to exit at once)\n");
}

}  // namespace

StopSignals::StopSignals() {
  if (g_alive.fetch_add(1) == 0) g_stop_requested.store(false);
  for (size_t i = 0; i < std::size(kSignals); ++i) previous_[i] = std::signal(kSignals[i], on_stop_signal);
}

StopSignals::~StopSignals() {
  for (size_t i = 0; i < std::size(kSignals); ++i) std::signal(kSignals[i], previous_[i]);
  g_alive.fetch_sub(1);
}

bool stop_requested() { return g_stop_requested.load(); }
void request_stop() { g_stop_requested.store(true); }

}  // namespace moh
