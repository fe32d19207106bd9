// The bit-for-bit resume check the task tests share: one run trained whole, and the same run trained
// for its first half then resumed from that checkpoint, must end with the same model bytes.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "trainers/config.h"
#include "trainers/task.h"
#include "trainers/trainer.h"

namespace moh::test {

// make_config(name, overrides) builds a config whose run folder is named `name`; `common` (which sets
// the whole run's train.steps) applies to all three runs: "full" (whole), "half" (train.steps =
// half_steps) and "resumed" (from half's checkpoint). Returns the resumed run's result.
template <class MakeConfig>
TrainResult expect_resume_matches_whole_run(const std::string& family, MakeConfig make_config,
                                            const std::vector<std::string>& common, int64_t half_steps) {
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), common.begin(), common.end());
    return extra;
  };
  Config full_cfg = make_config("full", with({}));
  auto full = task_family(family).create(full_cfg);
  Trainer(full_cfg, *full).run();
  Config first_cfg = make_config("half", with({"train.steps=" + std::to_string(half_steps)}));
  auto first = task_family(family).create(first_cfg);
  const TrainResult half = Trainer(first_cfg, *first).run();
  Config resume_cfg = make_config("resumed", with({"train.resume=" + half.checkpoint}));
  auto resumed = task_family(family).create(resume_cfg);
  const TrainResult done = Trainer(resume_cfg, *resumed).run();
  StateDict a = full->model().state_dict(), b = resumed->model().state_dict();
  EXPECT_EQ(a.size(), b.size());
  for (auto& [name, t] : a) {
    if (!b.count(name)) {
      ADD_FAILURE() << "the resumed model has no '" << name << "'";
      continue;
    }
    expect_same_bytes(b.at(name), t, name);
  }
  return done;
}

}  // namespace moh::test
