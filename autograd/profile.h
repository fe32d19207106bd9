// Phase profiling: where a forward and backward pass spend their time, by named phase (bench/attention
// --scope profile breaks an MoH layer into routing, projections, attention and row moves with it).
// While a PhaseProfiler is alive on a thread, ProfileScope marks the code of a phase: the forward time
// spent inside a scope is charged to its phase (exclusively: an inner scope's time is its own), and every
// tape node recorded inside it is tagged with the phase, which is then charged with that node's backward
// time. Time outside any scope goes to kRestPhase. Without a profiler a scope costs one thread-local read
// and nodes carry no phase. Times are host wall clock: on a GPU, where kernels run asynchronously, they
// measure launches unless the caller synchronises.
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace moh::ag {

inline constexpr const char* kRestPhase = "rest";

struct PhaseTime {
  double forward_ms = 0;
  double backward_ms = 0;
};

class PhaseProfiler {
 public:
  PhaseProfiler();  // becomes this thread's profiler; one at a time per thread
  ~PhaseProfiler();
  PhaseProfiler(const PhaseProfiler&) = delete;
  PhaseProfiler& operator=(const PhaseProfiler&) = delete;

  // Times so far, by phase name; the forward time of the phase now open is charged up to this call.
  const std::map<std::string, PhaseTime>& phases();

  // Engine and scope hooks (autograd/tape.cpp, ProfileScope).
  void charge_forward();  // the time since the last charge, to the open phase
  void skip_to_now();     // the time since the last charge is nobody's forward (backward ran)
  const char* open_phase() const { return phase_; }
  void set_open_phase(const char* phase) { phase_ = phase; }
  // The time since `start` to `phase`'s backward (kRestPhase when null).
  void add_backward(const char* phase, std::chrono::steady_clock::time_point start);

 private:
  std::map<std::string, PhaseTime> times_;
  const char* phase_ = kRestPhase;
  std::chrono::steady_clock::time_point last_;
};

// This thread's profiler, or nullptr.
PhaseProfiler* active_profiler();

// Marks the code of `phase` (a string literal) for its lifetime; nestable.
class ProfileScope {
 public:
  explicit ProfileScope(const char* phase);
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  const char* previous_ = nullptr;
};

}  // namespace moh::ag
