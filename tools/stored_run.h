// A trained run as the commands that use one (moh eval, moh generate) open it: RUN_DIR (its newest
// valid checkpoint in RUN_DIR/checkpoints) or a checkpoint file, the checkpoint's contents, and the
// config stored in it with the command line's key=value overrides applied (ConfigError on a bad
// override, moh::Error when there is no valid checkpoint). Warnings about skipped checkpoints go to
// stderr. weights_to_evaluate picks the trained or the EMA weights by eval.use_ema.
#pragma once

#include <string>
#include <vector>

#include "trainers/checkpoint.h"
#include "trainers/config.h"

namespace moh::cli {

struct StoredRun {
  std::string checkpoint;  // the file opened
  CheckpointData data;
  std::string task;        // the stored config's `task`
  Config config;
};

// `command` names the caller in errors ("moh eval").
StoredRun open_stored_run(const std::string& target, const std::vector<std::string>& overrides,
                          const std::string& command);

// The state the commands evaluate with: the checkpoint's model state, its parameters replaced by the EMA
// weights when the config (with the overrides) sets eval.use_ema (buffers are never averaged); moh::Error
// when EMA weights are asked for and the checkpoint holds none.
StateDict weights_to_evaluate(const StoredRun& run);

}  // namespace moh::cli
