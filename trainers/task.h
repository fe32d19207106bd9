// Task: what a model family plugs into the Trainer. A task owns its model and its data pipeline
// (so the trainer never needs to know what a sample is) and exposes what a checkpoint must hold to
// resume exactly: the loader position and every random generator it draws from. Families register
// a factory and their config section by name; the config key `task` picks one.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "core/random.h"
#include "layers/module.h"
#include "trainers/config.h"
#include "trainers/warning_channel.h"

namespace moh {

struct MicroBatchLoss {
  ag::Variable loss;                         // mean task loss over the micro-batch (0-d)
  std::vector<ag::Variable> balance_losses;  // one per MoH layer with routed heads (training only)
  int64_t samples = 0;
  int64_t tokens = 0;  // tokens processed where the family has tokens (0 otherwise)
};

class Task {
 public:
  virtual ~Task() = default;
  virtual Module& model() = 0;
  // Draws the next `batch_size` training samples (advancing the loader) and returns their loss.
  virtual MicroBatchLoss train_micro_batch(int64_t batch_size) = 0;
  // Metrics on the held-out split, in eval mode and without recording a tape ("loss", "top1", ...).
  // Every rank calls it together: each evaluates its shard and the sums are reduced over ranks
  // (trainers/eval_shard.h), so every rank returns the metrics of the whole split.
  virtual std::map<std::string, double> evaluate() = 0;
  // Training samples per epoch (for train.epochs and the epoch counter).
  virtual int64_t samples_per_epoch() const = 0;
  // The loader position ("epoch", "index", "shuffle_seed", ...) and its restore.
  virtual std::map<std::string, int64_t> data_state() const = 0;
  virtual void load_data_state(const std::map<std::string, int64_t>& state) = 0;
  // Every generator the task draws from (dropout, augmentation, shuffling), by name.
  virtual std::map<std::string, Generator*> generators() = 0;
  // Constant facts of the model that every metrics record of training carries ("active_heads",
  // "flops_per_token", ...). With "flops_per_token" (model FLOPs of one training step per token) the
  // trainer also logs the achieved model FLOP rate, "model_tflops" (per second, all ranks).
  virtual std::map<std::string, double> train_log_fields() const { return {}; }

  // The folder for what an evaluation writes besides its metrics (image grids, samples): the run folder
  // during training, the checkpoint's folder for `moh eval`. Unset (empty) means: write nothing.
  virtual void set_output_dir(const std::string& /*dir*/) {}

  // Recoverable problems of the task's data pipeline, from any thread (it outlives the task's own
  // members, so the pipeline's threads may report until they are joined).
  virtual WarningChannel& warnings() { return warnings_; }

 protected:
  WarningChannel warnings_;
};

struct TaskFamily {
  std::string name;
  std::string doc;                                               // one line for `moh --help`
  std::function<config::Schema()> schema;                        // the family's own keys (model.*, data.*)
  std::function<std::unique_ptr<Task>(const Config&)> create;   // builds model and data from a validated config
};

// The families compiled into this binary, in registration order.
const std::vector<TaskFamily>& task_families();
const TaskFamily& task_family(const std::string& name);  // throws ConfigError listing the known names

}  // namespace moh
