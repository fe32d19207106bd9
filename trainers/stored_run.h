// A trained run as the commands and tasks that use one (moh eval, generate, sample, fid; the DiT task's
// autoencoder and FID classifier) open it: RUN_DIR (its newest
// valid checkpoint in RUN_DIR/checkpoints) or a checkpoint file, the checkpoint's contents, and the
// config stored in it with the command line's key=value overrides applied (ConfigError on a bad
// override, moh::Error when there is no valid checkpoint). Warnings about skipped checkpoints go to
// stderr. Opening a run sets the process's thread count to the run's `threads` (when > 0; threads=N
// overrides it). weights_to_evaluate picks the trained or the EMA weights by eval.use_ema; require_task
// checks what kind of run it is.
#pragma once

#include <string>
#include <vector>

#include "trainers/checkpoint.h"
#include "trainers/config.h"

namespace moh {

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

// ConfigError unless `run` is a run of task `task`: "'<checkpoint>' is a checkpoint of a '<its task>' run;
// <command> needs <what>".
void require_task(const StoredRun& run, const std::string& task, const std::string& command, const std::string& what);

}  // namespace moh
