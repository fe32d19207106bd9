// Learning-rate schedules as pure functions of the optimizer step s (0-based: the s-th call of
// step() uses lr_at(s)). A linear warmup ramps the rate over the first warmup_steps steps,
//   s < W:  lr = base_lr * (s + 1) / W         (the first step already moves; step W - 1 reaches base_lr)
// then, with progress u = (s - W) / (T - W) clamped to [0, 1] (u = 1 when T == W):
//   constant: base_lr
//   cosine:   min_lr + (base_lr - min_lr) * (1 + cos(pi * u)) / 2
//   linear:   min_lr + (base_lr - min_lr) * (1 - u)
// so the rate never falls below the floor min_lr and stays there from step T on.
#pragma once

#include <cstdint>
#include <string>

namespace moh {

enum class ScheduleKind { Constant, Cosine, Linear };

// "constant" | "cosine" | "linear" (throws naming the text otherwise), and back.
ScheduleKind parse_schedule_kind(const std::string& text);
std::string schedule_kind_name(ScheduleKind kind);

struct ScheduleOptions {
  ScheduleKind kind = ScheduleKind::Cosine;
  double base_lr = 1e-3;
  double min_lr = 0;          // the floor, <= base_lr (unused by constant)
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;    // T; cosine and linear need T >= 1; constant allows 0 (no end)
};

// Throws moh::Error naming the field on a negative or non-finite rate, min_lr > base_lr, negative
// step counts, warmup_steps > total_steps, or total_steps == 0 for a decaying schedule.
void validate_schedule(const ScheduleOptions& options);

// The rate for step s >= 0 (validates the options; throws on s < 0).
double lr_at(const ScheduleOptions& options, int64_t step);

}  // namespace moh
