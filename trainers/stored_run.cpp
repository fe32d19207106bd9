// open_stored_run: checkpoint lookup and the stored config; the evaluation weights; the task check
// (see stored_run.h).
#include "trainers/stored_run.h"

#include <filesystem>
#include <iostream>
#include <optional>

#include "core/ops.h"
#include "trainers/trainer.h"

namespace moh {

StoredRun open_stored_run(const std::string& target, const std::vector<std::string>& overrides,
                          const std::string& command) {
  std::string checkpoint = target;
  if (std::filesystem::is_directory(checkpoint)) {
    CheckpointManager manager(checkpoint + "/checkpoints", 0);
    const std::optional<std::string> latest = manager.latest_valid();
    for (const std::string& w : manager.take_warnings()) std::cerr << "warning: " << w << "\n";
    MOH_CHECK(latest.has_value(), command, ": no valid checkpoint in '", target, "/checkpoints'");
    checkpoint = *latest;
  }
  CheckpointData data = load_checkpoint(checkpoint);
  const std::string task = Config::peek_string_text(data.config_text, "task", overrides);
  Config config = Config::parse(data.config_text, training_schema(task), checkpoint + " (stored config)", overrides);
  // The run's thread count: runs that train several one-thread processes per machine say threads: 1, and
  // OpenMP threads beyond the free cores spin against each other (10x slower sampling on a loaded 2-core VM).
  if (config.get_int("threads") > 0) set_num_threads(int(config.get_int("threads")));
  return {checkpoint, std::move(data), task, std::move(config)};
}

StateDict weights_to_evaluate(const StoredRun& run) {
  if (!run.config.get_bool("eval.use_ema")) return run.data.model;
  MOH_CHECK(!run.data.ema.empty(), "eval.use_ema: the checkpoint '", run.checkpoint,
            "' holds no EMA weights (the run had no ema.decay); pass eval.use_ema=false");
  StateDict state = run.data.model;
  for (const auto& [name, value] : run.data.ema) state[name] = value;
  return state;
}

void require_task(const StoredRun& run, const std::string& task, const std::string& command, const std::string& what) {
  if (run.task != task)
    throw ConfigError(str_cat("'", run.checkpoint, "' is a checkpoint of a '", run.task, "' run; ", command, " needs ",
                              what));
}

}  // namespace moh
