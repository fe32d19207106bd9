// check_resume_config(): a resumed run against the config stored in its checkpoint. Every key that
// differs (but train.resume itself) is reported as a warning in the run log, `key old -> new`;
// keys that define what the stored state means cannot change (kResumeFixedKeys: `task`, `model.*`
// but model.moh_execution, `optim.name`) and are refused with a ConfigError naming each of them.
// Everything else may change (train.steps extended, eval.*, logging, checkpoint.*, optim.lr, data
// paths, ...), at the price of no longer continuing the interrupted run bit for bit.
// A stored config that cannot be read with this build's schemas is reported and not compared.
#pragma once

#include <string>

#include "trainers/config.h"
#include "trainers/run_log.h"

namespace moh {

// Whether `key` must keep its stored value across a resume.
bool resume_fixed_key(const std::string& key);

void check_resume_config(const Config& current, const std::string& stored_text, const std::string& checkpoint,
                         RunLog& log);

}  // namespace moh
