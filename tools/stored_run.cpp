// open_stored_run: checkpoint lookup and the stored config (see stored_run.h).
#include "tools/stored_run.h"

#include <filesystem>
#include <iostream>
#include <optional>

#include "trainers/trainer.h"

namespace moh::cli {

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

}  // namespace moh::cli
