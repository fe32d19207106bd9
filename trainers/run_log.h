// RunLog: everything a run writes for people and plotting scripts, in its run folder:
//   train.log      - human log lines (spdlog; also echoed to the console), every warning and the
//                    error that ended a run included,
//   metrics.jsonl  - one JSON object per logged step and per evaluation, appended across resumes
//                    (keys: step, epoch, loss, lb_loss, lr, grad_norm, samples_per_s, tokens_per_s,
//                    step_ms, mem_peak_mb, eval/<name>),
// and the progress display: a single rewritten line with rate and ETA when stderr is a terminal,
// plain log lines otherwise. Only one RunLog writes to a folder (rank 0 in distributed runs).
// Write failures: a metrics record that cannot be written is an error (the partial line is removed,
// see core/io/checked_write.h); train.log lines that cannot be written are a loud warning on the
// console (the run goes on: the console still has them), and the count is reported at the end.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/io/checked_write.h"

namespace spdlog {
class logger;
}

namespace moh {

class RunLog {
 public:
  // Creates `dir` if needed and opens train.log and metrics.jsonl for appending. A disabled log
  // (data-parallel ranks other than 0) touches no file and prints nothing.
  explicit RunLog(const std::string& dir, bool enabled = true);
  ~RunLog();

  void info(const std::string& line);
  void warn(const std::string& line);
  // An error line in train.log only: for the failure that ends a run, which the caller reports on
  // the console itself.
  void error_to_file(const std::string& line);
  // Appends one JSON line to metrics.jsonl in one write (a crash loses nothing written); throws
  // moh::Error when it cannot be written.
  void metrics(const nlohmann::json& record);
  // Progress of step `step` of `total`: a terminal status line (rate, ETA) redrawn at most a few
  // times a second; `summary` is shown after the counters.
  void progress(int64_t step, int64_t total, double steps_per_s, const std::string& summary);
  // Ends a terminal status line before other output.
  void end_progress();

  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::shared_ptr<spdlog::logger> logger_, file_logger_;
  AppendOnlyFile metrics_;
  std::shared_ptr<std::atomic<int64_t>> lost_lines_;  // train.log lines that could not be written
  bool terminal_ = false;
  bool progress_shown_ = false;
  double last_draw_ = 0;
};

// "1h02m", "3m05s", "42s".
std::string format_duration(double seconds);

}  // namespace moh
