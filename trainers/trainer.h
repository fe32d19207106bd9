// Trainer: the training loop every family shares. Per optimizer step it runs grad_accum
// micro-batches (loss scaled by 1/grad_accum, plus moh.balance_loss times the mean of the MoH
// layers' balance losses), clips the global gradient norm, applies the non-finite policy, sets the
// scheduled learning rate and steps the optimizer; it logs metrics every train.log_every steps,
// evaluates every eval.every, checkpoints every checkpoint.every (atomically, with everything needed
// to resume bit for bit on CPU, and on CUDA with deterministic: true), resumes per train.resume
// (checking the stored config: trainers/resume_check.h), and on SIGINT/SIGTERM/SIGUSR1 saves a
// checkpoint and returns cleanly (a second SIGINT ends the process at once, status 130). A skipped
// update (an fp16 loss-scale overflow, or train.nonfinite: skip_step) still counts as a step: the
// schedule, evaluation and checkpoints go on; skip_step gives up after train.max_skipped_steps
// skipped updates in a row. Data-parallel ranks first prove they run the same job (same_job.h). Device and precision (trainers/precision.h): the task places its model and
// batches on training_device(cfg); the optimizer state follows the parameters, checkpoints hold CPU
// copies, and the numerics switches hold for the trainer's lifetime.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "trainers/config.h"
#include "trainers/run_log.h"
#include "trainers/task.h"

namespace moh {

class Optimizer;

struct TrainResult {
  int64_t step = 0;              // optimizer steps completed (including resumed ones)
  bool interrupted = false;      // stopped by SIGINT/SIGTERM after saving a checkpoint
  std::map<std::string, double> eval;  // the last evaluation's metrics
  std::string checkpoint;        // the last checkpoint written, else the one resumed from ("" if neither)
  std::string run_dir;
};

class Trainer {
 public:
  Trainer(const Config& config, Task& task);
  ~Trainer();
  TrainResult run();

  // Asks a running trainer to checkpoint and stop after the current step (what the signal handler
  // does); safe to call from a signal handler.
  static void request_stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The common schema, the `task` key and the family's own section: what `moh train` validates against.
config::Schema training_schema(const std::string& family);

}  // namespace moh
