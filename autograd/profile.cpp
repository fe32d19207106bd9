// PhaseProfiler and ProfileScope (see profile.h): the thread's profiler and its forward time accounting.
#include "autograd/profile.h"

#include "core/error.h"

namespace moh::ag {
namespace {

thread_local PhaseProfiler* current = nullptr;

double ms_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

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
  times_[phase_].forward_ms += ms_between(last_, now);
  last_ = now;
}

void PhaseProfiler::add_backward(const char* phase, std::chrono::steady_clock::time_point start) {
  times_[phase ? phase : kRestPhase].backward_ms += ms_between(start, std::chrono::steady_clock::now());
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
