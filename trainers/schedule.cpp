// Learning-rate schedules (the formulas are in schedule.h).
#include "trainers/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace moh {

ScheduleKind parse_schedule_kind(const std::string& text) {
  if (text == "constant") return ScheduleKind::Constant;
  if (text == "cosine") return ScheduleKind::Cosine;
  if (text == "linear") return ScheduleKind::Linear;
  MOH_FAIL("lr schedule: unknown kind '", text, "' (expected constant, cosine or linear)");
}

std::string schedule_kind_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::Constant: return "constant";
    case ScheduleKind::Cosine: return "cosine";
    case ScheduleKind::Linear: return "linear";
  }
  MOH_FAIL("lr schedule: unknown kind");
}

void validate_schedule(const ScheduleOptions& o) {
  MOH_CHECK(std::isfinite(o.base_lr) && o.base_lr >= 0, "lr schedule: base_lr must be finite and >= 0, got ",
            o.base_lr);
  MOH_CHECK(std::isfinite(o.min_lr) && o.min_lr >= 0 && o.min_lr <= o.base_lr,
            "lr schedule: min_lr must be in [0, base_lr = ", o.base_lr, "], got ", o.min_lr);
  MOH_CHECK(o.warmup_steps >= 0, "lr schedule: warmup_steps must be >= 0, got ", o.warmup_steps);
  MOH_CHECK(o.total_steps >= 0, "lr schedule: total_steps must be >= 0, got ", o.total_steps);
  MOH_CHECK(o.kind == ScheduleKind::Constant || o.total_steps >= 1, "lr schedule: ", schedule_kind_name(o.kind),
            " needs total_steps >= 1");
  MOH_CHECK(o.total_steps == 0 || o.warmup_steps <= o.total_steps, "lr schedule: warmup_steps (", o.warmup_steps,
            ") must not exceed total_steps (", o.total_steps, ")");
}

double lr_at(const ScheduleOptions& o, int64_t step) {
  validate_schedule(o);
  MOH_CHECK(step >= 0, "lr schedule: step must be >= 0, got ", step);
  if (step < o.warmup_steps) return o.base_lr * double(step + 1) / double(o.warmup_steps);
  if (o.kind == ScheduleKind::Constant) return o.base_lr;
  const int64_t span = o.total_steps - o.warmup_steps;
  const double u = span == 0 ? 1.0 : std::min(1.0, double(step - o.warmup_steps) / double(span));
  if (o.kind == ScheduleKind::Linear) return o.min_lr + (o.base_lr - o.min_lr) * (1 - u);
  return o.min_lr + (o.base_lr - o.min_lr) * 0.5 * (1 + std::cos(std::numbers::pi * u));
}

}  // namespace moh
