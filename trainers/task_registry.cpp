// The task families compiled into moh, in the order `moh --help` lists them.
#include <sstream>

#include "trainers/autoencoder_task.h"
#include "trainers/dit_task.h"
#include "trainers/llm_task.h"
#include "trainers/synthetic_task.h"
#include "trainers/task.h"
#include "trainers/vit_task.h"

namespace moh {

const std::vector<TaskFamily>& task_families() {
  static const std::vector<TaskFamily> families{vit_task_family(), llm_task_family(), autoencoder_task_family(),
                                                dit_task_family(), synthetic_task_family()};
  return families;
}

const TaskFamily& task_family(const std::string& name) {
  std::ostringstream known;
  for (const TaskFamily& f : task_families()) {
    if (f.name == name) return f;
    known << (known.tellp() > 0 ? ", " : "") << f.name;
  }
  throw ConfigError(str_cat("unknown task '", name, "' (this build has: ", known.str(), ")"));
}

}  // namespace moh
