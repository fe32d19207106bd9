// RunLog: spdlog sinks, the JSONL metrics stream and the progress line.
#include "trainers/run_log.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "core/error.h"

namespace moh {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = int64_t(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
  else if (s >= 60) std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  else std::snprintf(buf, sizeof buf, "%llds", (long long)s);
  return buf;
}

RunLog::RunLog(const std::string& dir, bool enabled) : dir_(dir), lost_lines_(std::make_shared<std::atomic<int64_t>>(0)) {
  if (!enabled) {
    logger_ = file_logger_ = std::make_shared<spdlog::logger>("moh-disabled:" + dir);
    return;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  MOH_CHECK(!ec, "run folder '", dir, "' cannot be created: ", ec.message());
  std::shared_ptr<spdlog::sinks::basic_file_sink_mt> file_sink;
  try {
    file_sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(dir + "/train.log", false);
  } catch (const spdlog::spdlog_ex& e) {
    MOH_FAIL("cannot open '", dir, "/train.log' for appending: ", e.what());
  }
  metrics_ = AppendOnlyFile(dir + "/metrics.jsonl");
  // The console sink first: a failing file write must not keep a line from the console.
  auto console_sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  logger_ = std::make_shared<spdlog::logger>("moh:" + dir, spdlog::sinks_init_list{console_sink, file_sink});
  file_logger_ = std::make_shared<spdlog::logger>("moh-file:" + dir, file_sink);
  for (auto& logger : {logger_, file_logger_}) {
    logger->set_pattern("[%Y-%m-%d %H:%M:%S] %^%l%$ %v");
    logger->flush_on(spdlog::level::info);
    logger->set_error_handler([lost = lost_lines_, path = dir + "/train.log"](const std::string& why) {
      if ((*lost)++ == 0)
        std::fprintf(stderr, "moh: WARNING: cannot write '%s' (%s): the lines that fail are missing from it (the "
                     "run goes on; the console has them)\n", path.c_str(), why.c_str());
    });
  }
  terminal_ = isatty(STDERR_FILENO) != 0;
  if (metrics_.repaired() > 0)
    warn(str_cat("metrics.jsonl ended in a torn record (", metrics_.repaired(),
                 " bytes of a write that never finished): removed it"));
}

RunLog::~RunLog() {
  end_progress();
  if (*lost_lines_ > 0)
    std::fprintf(stderr, "moh: WARNING: %lld log line%s could not be written to '%s/train.log'\n",
                 (long long)lost_lines_->load(), *lost_lines_ == 1 ? "" : "s", dir_.c_str());
}

void RunLog::info(const std::string& line) {
  end_progress();
  logger_->info(line);
}

void RunLog::warn(const std::string& line) {
  end_progress();
  logger_->warn(line);
}

void RunLog::error_to_file(const std::string& line) {
  end_progress();
  file_logger_->error(line);
}

void RunLog::metrics(const nlohmann::json& record) {
  if (metrics_.is_open()) metrics_.append_line(record.dump());
}

void RunLog::progress(int64_t step, int64_t total, double steps_per_s, const std::string& summary) {
  const double eta = steps_per_s > 0 ? double(total - step) / steps_per_s : NAN;
  if (!terminal_) return;  // log files get the periodic info lines instead
  const double t = now_seconds();
  if (step != total && t - last_draw_ < 0.2) return;
  last_draw_ = t;
  const int width = 24;
  const int filled = total > 0 ? int(double(width) * double(step) / double(total)) : 0;
  std::fprintf(stderr, "\r[%s%s] %lld/%lld %.2f it/s ETA %s %s\033[K", std::string(size_t(filled), '#').c_str(),
               std::string(size_t(width - filled), '.').c_str(), (long long)step, (long long)total, steps_per_s,
               format_duration(eta).c_str(), summary.c_str());
  std::fflush(stderr);
  progress_shown_ = true;
}

void RunLog::end_progress() {
  if (!progress_shown_) return;
  std::fprintf(stderr, "\n");
  progress_shown_ = false;
}

}  // namespace moh
