// PhaseProfiler and ProfileScope (see profile.h): the thread's profiler and its forward time accounting.
#include "autograd/profile.h"

#include "core/error.h"

namespace moh::ag {
namespace {

thread_local PhaseProfiler* current = nullptr;

}  // namespace

PhaseProfiler::PhaseProfiler() : last_(std::chrono::steady_clock::now()) {
  MOH_CHECK(current == nullptr, "PhaseProfiler: this thread already has one");
  current = this;
}

PhaseProfiler::~PhaseProfiler() { current = nullptr; }

const std::map<std::string, PhaseTime>& PhaseProfiler::phases() {
  charge_forward();
  return times_;
}

void PhaseProfiler::charge_forward() {
  const auto now = std::chrono::steady_clock::now();
  times_[phase_].forward_ms += std::chrono::duration<double, std::milli>(now - last_).count();
  last_ = now;
}

void PhaseProfiler::skip_to_now() { last_ = std::chrono::steady_clock::now(); }

PhaseProfiler* active_profiler() { return current; }

ProfileScope::ProfileScope(const char* phase) {
  if (!current) return;
  current->charge_forward();
  previous_ = current->open_phase();
  current->set_open_phase(phase);
}

ProfileScope::~ProfileScope() {
  if (!current || !previous_) return;
  current->charge_forward();
  current->set_open_phase(previous_);
}

}  // namespace moh::ag
