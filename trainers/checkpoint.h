// Training checkpoints: one HDF5 file per save holding the model (and EMA) weights, the optimizer
// state, the scheduler, every RNG stream, the data loader position, metrics, the step/epoch and the
// resolved config text (layout: docs/checkpoints.md). A save writes path + ".tmp", fsyncs it, renames
// it over `path` and fsyncs the directory, so `path` is either the previous file or the complete new
// one. A CRC32 over the whole content and a "complete" marker (written last) let a load tell a good
// file from a truncated, interrupted or modified one; a file that cannot be opened now (locked by
// another process, unreadable for permissions) is CheckpointUnavailable, never "corrupt".
// CheckpointManager owns a run's checkpoint folder: step_%08d.h5 names, keep-last-N plus
// best-by-metric pruning, and train.resume resolution.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "layers/module.h"

namespace moh {

inline constexpr int64_t kCheckpointFormatVersion = 1;  // bumped on any layout change; loads reject newer
inline constexpr const char* kMohVersion = "0.1.0";     // the framework version stored in checkpoints

struct CheckpointData {
  int64_t step = 0;         // optimizer steps done
  int64_t epoch = 0;        // passes over the training set started
  std::string config_text;  // the resolved config (YAML), for reproduction
  StateDict model;          // parameters and buffers by dotted name
  StateDict ema;            // EMA weights (empty when EMA is off)
  // Optimizer::state_dict(): "<param>/<state>", "<param>/step", "step".
  std::map<std::string, Tensor> optimizer;
  std::map<std::string, double> scheduler;  // schedule state (e.g. "last_lr")
  // Every random stream by name: (seed, offset) of its Generator.
  std::map<std::string, std::pair<uint64_t, uint64_t>> rng;
  std::map<std::string, int64_t> data;    // loader position ("epoch", "index", "shuffle_seed", ...)
  std::map<std::string, double> metrics;  // latest metrics (the best-checkpoint policy reads these)
};

// A checkpoint that exists but cannot be read now: locked by another process (being written, or held
// open for writing by h5py and the like) or refused by the system (permissions). Not damage: callers
// report it instead of falling back to an older checkpoint.
class CheckpointUnavailable : public Error {
 public:
  using Error::Error;
};

// Writes `data` to `path` atomically (see above). Names must be valid HDF5 path components: model/ema
// names and generator names may not contain '/', optimizer names may (they become nested groups).
// Throws moh::Error naming the file; on failure `path` is untouched and no ".tmp" is left behind.
void save_checkpoint(const std::string& path, const CheckpointData& data);
// Loads and verifies a checkpoint: format version, "complete" marker and checksum. Throws moh::Error
// "checkpoint '<path>' is corrupt: ..." for a truncated, unfinished or modified file, and
// CheckpointUnavailable for one that cannot be opened now (it holds a shared lock while reading).
CheckpointData load_checkpoint(const std::string& path);
// The CRC32 load_checkpoint compares with the stored one (docs/checkpoints.md gives the byte stream).
uint32_t checkpoint_checksum(const CheckpointData& data);

class CheckpointManager {
 public:
  // `dir` is created when missing. keep_last >= 0 (0 keeps every checkpoint). With `best_metric`
  // set, the checkpoint with the best value of metrics[best_metric] (mode "min" or "max"; ties keep
  // the earlier one) is kept in addition to the newest keep_last.
  CheckpointManager(std::string dir, int64_t keep_last, std::string best_metric = "", std::string mode = "max");

  const std::string& dir() const { return dir_; }
  std::string path_for(int64_t step) const;  // dir/step_%08d.h5

  // Saves `data` as path_for(step), then prunes (old checkpoints and stale ".tmp" files). Returns the path.
  std::string save(int64_t step, const CheckpointData& data);
  // Checkpoint files in the folder (step_*.h5, valid or not), oldest step first.
  std::vector<std::string> list() const;
  // The newest checkpoint that loads and verifies; corrupt ones are skipped with a warning. One that
  // stays unavailable (locked) for busy_wait_s() is an error (CheckpointUnavailable), not skipped.
  std::optional<std::string> latest_valid();
  // The complete checkpoint with the best metric (nullopt without best_metric or candidates).
  std::optional<std::string> best() const;

  // train.resume: "auto" -> the latest valid checkpoint or nothing (fresh start); "" or "none" ->
  // nothing; anything else is a checkpoint path that must load and verify (throws otherwise).
  struct Resume {
    std::string path;
    CheckpointData data;
  };
  std::optional<Resume> resolve_resume(const std::string& spec);

  // Warnings collected since the last call (skipped corrupt checkpoints), for the run log.
  std::vector<std::string> take_warnings();

  // Seconds a load retries a locked checkpoint before giving up (default 10).
  double busy_wait_s() const { return busy_wait_s_; }
  void set_busy_wait_s(double seconds) { busy_wait_s_ = seconds; }

 private:
  std::optional<Resume> scan_latest();
  CheckpointData load_when_available(const std::string& path) const;

  std::string dir_;
  int64_t keep_last_;
  std::string best_metric_;
  bool maximize_ = false;
  double busy_wait_s_ = 10;
  std::vector<std::string> warnings_;
};

}  // namespace moh
