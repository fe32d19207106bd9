// A resume's config against its checkpoint's (see resume_check.h).
#include "trainers/resume_check.h"

#include "trainers/config_diff.h"
#include "trainers/trainer.h"

namespace moh {

bool resume_fixed_key(const std::string& key) {
  // The model's architecture fixes the stored tensors' names, shapes and meaning; moh_execution and
  // moh_projections only choose how the same function is computed (numerically equal).
  if (key.starts_with("model.")) return key != "model.moh_execution" && key != "model.moh_projections";
  // Another task or optimizer cannot use the stored weights or optimizer state.
  return key == "task" || key == "optim.name";
}

void check_resume_config(const Config& current, const std::string& stored_text, const std::string& checkpoint,
                         RunLog& log) {
  const std::string source = checkpoint + " (stored config)";
  Config stored;
  try {
    const std::string family = Config::peek_string_text(stored_text, "task", {}, source);
    stored = Config::parse(stored_text, training_schema(family), source);
  } catch (const ConfigError& e) {
    log.warn(str_cat("resume: the config stored in ", checkpoint, " cannot be read by this build, so it is not ",
                      "compared with this run's: ", e.what()));
    return;
  }
  const std::vector<ConfigDifference> diffs = config_differences(stored, current, {"train.resume"});
  std::vector<ConfigDifference> fixed;
  for (const ConfigDifference& d : diffs) {
    log.warn(str_cat("resume: ", d.key, " differs from the checkpoint's config: ", d.a, " -> ", d.b));
    if (resume_fixed_key(d.key)) fixed.push_back(d);
  }
  if (!fixed.empty())
    throw ConfigError(str_cat("train.resume: cannot resume ", checkpoint, " with another ",
                              fixed.size() == 1 ? "value of " : "value of these keys: ", describe_differences(fixed),
                              " (task, model.* and optim.name must match the checkpoint's config; start a new run ",
                              "with another run.name to change them)"));
}

}  // namespace moh
