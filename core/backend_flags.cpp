// Process-wide numerics switches (core/backend_flags.h).
#include "core/backend_flags.h"

#include <atomic>

namespace moh {
namespace {
std::atomic<bool> g_deterministic{false};
std::atomic<bool> g_tf32{false};
}  // namespace

void set_deterministic_algorithms(bool on) { g_deterministic.store(on); }
bool deterministic_algorithms() { return g_deterministic.load(); }
void set_allow_tf32(bool on) { g_tf32.store(on); }
bool allow_tf32() { return g_tf32.load(); }

}  // namespace moh
