// GradModeGuard: sets whether this thread records differentiable calls (grad_enabled(), tape.h) for
// its lifetime and restores the previous mode, also when an exception leaves the scope; nestable.
// NoGradGuard is the common case (off); checkpoint (checkpoint.h) turns recording back on inside a
// backward to recompute a segment on a nested tape.
#pragma once

namespace moh::ag {

class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled);
  ~GradModeGuard();
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace moh::ag
