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

RunLog::RunLog(const std::string& dir, bool enabled) : dir_(dir) {
  if (!enabled) {
    logger_ = std::make_shared<spdlog::logger>("moh-disabled:" + dir);
    return;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  MOH_CHECK(!ec, "run folder '", dir, "' cannot be created: ", ec.message());
  auto file_sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(dir + "/train.log", false);
  auto console_sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  logger_ = std::make_shared<spdlog::logger>("moh:" + dir, spdlog::sinks_init_list{file_sink, console_sink});
  logger_->set_pattern("[%Y-%m-%d %H:%M:%S] %^%l%$ %v");
  logger_->flush_on(spdlog::level::info);
  metrics_.open(dir + "/metrics.jsonl", std::ios::app);
  MOH_CHECK(metrics_.good(), "cannot open '", dir, "/metrics.jsonl' for writing");
  terminal_ = isatty(STDERR_FILENO) != 0;
}

RunLog::~RunLog() { end_progress(); }

void RunLog::info(const std::string& line) {
  end_progress();
  logger_->info(line);
}

void RunLog::warn(const std::string& line) {
  end_progress();
  logger_->warn(line);
}

void RunLog::metrics(const nlohmann::json& record) {
  metrics_ << record.dump() << '\n';
  metrics_.flush();
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
