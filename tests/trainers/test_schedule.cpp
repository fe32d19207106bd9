// LR schedules: values at the first step, the warmup boundary, the midpoint, the end and past it
// (the floor) for cosine, linear and constant, and every invalid setting.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "tests/trainers/trainer_test_util.h"
#include "trainers/schedule.h"

namespace moh {
namespace {

using trainer_test::expect_error;

ScheduleOptions options(ScheduleKind kind, int64_t warmup, int64_t total) {
  return {.kind = kind, .base_lr = 0.1, .min_lr = 0.01, .warmup_steps = warmup, .total_steps = total};
}

TEST(TrainerSchedule, WarmupRampsLinearlyFromTheFirstStep) {
  for (ScheduleKind kind : {ScheduleKind::Constant, ScheduleKind::Cosine, ScheduleKind::Linear}) {
    const ScheduleOptions o = options(kind, 4, 14);
    const std::string what = schedule_kind_name(kind);
    EXPECT_DOUBLE_EQ(lr_at(o, 0), 0.025) << what;
    EXPECT_DOUBLE_EQ(lr_at(o, 1), 0.05) << what;
    EXPECT_DOUBLE_EQ(lr_at(o, 3), 0.1) << what;  // the last warmup step reaches base_lr
    EXPECT_DOUBLE_EQ(lr_at(o, 4), 0.1) << what;  // and the decay starts from it
  }
}

TEST(TrainerSchedule, CosineMidpointEndAndFloor) {
  const ScheduleOptions o = options(ScheduleKind::Cosine, 4, 14);
  EXPECT_DOUBLE_EQ(lr_at(o, 9), 0.055);  // halfway through the decay: (base + min) / 2
  const double u = 3.0 / 10.0;
  EXPECT_DOUBLE_EQ(lr_at(o, 7), 0.01 + 0.09 * 0.5 * (1 + std::cos(std::numbers::pi * u)));
  EXPECT_GT(lr_at(o, 13), 0.01);  // the last step of the run is just above the floor
  EXPECT_EQ(lr_at(o, 14), 0.01);  // exactly the floor at total_steps and after
  EXPECT_EQ(lr_at(o, 1000), 0.01);
  for (int64_t s = 4; s < 14; ++s) EXPECT_LT(lr_at(o, s + 1), lr_at(o, s)) << s;  // strictly decreasing
}

TEST(TrainerSchedule, LinearMidpointEndAndFloor) {
  const ScheduleOptions o = options(ScheduleKind::Linear, 2, 12);
  EXPECT_DOUBLE_EQ(lr_at(o, 2), 0.1);
  EXPECT_DOUBLE_EQ(lr_at(o, 7), 0.055);
  EXPECT_DOUBLE_EQ(lr_at(o, 4), 0.01 + 0.09 * 0.8);
  EXPECT_EQ(lr_at(o, 12), 0.01);
  EXPECT_EQ(lr_at(o, 50), 0.01);
}

TEST(TrainerSchedule, ConstantAndEdgeCases) {
  EXPECT_EQ(lr_at(options(ScheduleKind::Constant, 0, 0), 0), 0.1);  // no end needed
  EXPECT_EQ(lr_at(options(ScheduleKind::Constant, 3, 0), 1000000), 0.1);
  EXPECT_DOUBLE_EQ(lr_at(options(ScheduleKind::Constant, 3, 0), 0), 0.1 / 3);
  // No warmup: the decay starts at step 0 from base_lr.
  EXPECT_EQ(lr_at(options(ScheduleKind::Cosine, 0, 10), 0), 0.1);
  // Warmup filling the whole run: the floor right after it.
  const ScheduleOptions full = options(ScheduleKind::Cosine, 5, 5);
  EXPECT_DOUBLE_EQ(lr_at(full, 4), 0.1);
  EXPECT_EQ(lr_at(full, 5), 0.01);
  // A one-step run without warmup.
  EXPECT_EQ(lr_at(options(ScheduleKind::Linear, 0, 1), 0), 0.1);
  EXPECT_EQ(lr_at(options(ScheduleKind::Linear, 0, 1), 1), 0.01);
  // min_lr == base_lr is flat.
  ScheduleOptions flat = options(ScheduleKind::Cosine, 0, 10);
  flat.min_lr = 0.1;
  EXPECT_EQ(lr_at(flat, 5), 0.1);
}

TEST(TrainerSchedule, KindNames) {
  for (ScheduleKind kind : {ScheduleKind::Constant, ScheduleKind::Cosine, ScheduleKind::Linear})
    EXPECT_EQ(parse_schedule_kind(schedule_kind_name(kind)), kind);
  expect_error([] { parse_schedule_kind("step"); }, "unknown kind 'step'");
}

TEST(TrainerSchedule, InvalidSettingsThrow) {
  auto bad = [](ScheduleOptions o, const std::string& phrase) { expect_error([&] { validate_schedule(o); }, phrase); };
  ScheduleOptions o = options(ScheduleKind::Cosine, 11, 10);
  bad(o, "warmup_steps (11) must not exceed total_steps (10)");
  o = options(ScheduleKind::Cosine, -1, 10);
  bad(o, "warmup_steps");
  o = options(ScheduleKind::Constant, 0, -5);
  bad(o, "total_steps");
  o = options(ScheduleKind::Linear, 0, 0);
  bad(o, "linear needs total_steps >= 1");
  o = options(ScheduleKind::Cosine, 0, 10);
  o.base_lr = -0.1;
  bad(o, "base_lr");
  o.base_lr = INFINITY;
  bad(o, "base_lr");
  o = options(ScheduleKind::Cosine, 0, 10);
  o.min_lr = 0.2;
  bad(o, "min_lr");
  o.min_lr = -0.01;
  bad(o, "min_lr");
  expect_error([] { lr_at(options(ScheduleKind::Cosine, 0, 10), -1); }, "step must be >= 0");
  expect_error([] { lr_at(options(ScheduleKind::Cosine, 20, 10), 0); }, "must not exceed");
}

}  // namespace
}  // namespace moh
