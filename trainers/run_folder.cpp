// Claiming a run folder: lock, then the one-run-per-folder rule (see run_folder.h).
#include "trainers/run_folder.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "trainers/checkpoint.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

// Whether `checkpoint` lies in the folder `dir` (after resolving '..' and symlinks).
bool inside(const std::string& checkpoint, const std::string& dir) {
  std::error_code ec;
  const fs::path parent = fs::weakly_canonical(fs::absolute(checkpoint, ec).parent_path(), ec);
  return !ec && parent == fs::weakly_canonical(fs::absolute(dir, ec), ec);
}

// What of a previous run the folder holds ("" when nothing): its resolved config, its checkpoints.
std::string previous_run(const std::string& folder) {
  std::error_code ec;
  const std::vector<std::string> checkpoints = CheckpointManager(folder + "/checkpoints", 0).list();
  if (!checkpoints.empty())
    return str_cat(checkpoints.size(), " checkpoint", checkpoints.size() == 1 ? "" : "s", ", the newest '",
                   checkpoints.back(), "'");
  if (fs::exists(folder + "/config.yaml", ec)) return "the config.yaml of a run that saved no checkpoint";
  return "";
}

void delete_run(const std::string& folder) {
  std::error_code ec;
  for (const char* name : {"config.yaml", "train.log", "metrics.jsonl"}) {
    fs::remove(fs::path(folder) / name, ec);
    MOH_CHECK(!ec, "run.overwrite: cannot delete '", folder, "/", name, "': ", ec.message());
  }
  fs::remove_all(fs::path(folder) / "checkpoints", ec);
  MOH_CHECK(!ec, "run.overwrite: cannot delete '", folder, "/checkpoints': ", ec.message());
}

}  // namespace

std::string RunFolder::path_of(const Config& cfg) { return cfg.get_string("run.dir") + "/" + cfg.get_string("run.name"); }

RunFolder::RunFolder(const Config& cfg) : path_(path_of(cfg)) {
  std::error_code ec;
  fs::create_directories(path_, ec);
  MOH_CHECK(!ec && fs::is_directory(path_, ec), "run folder '", path_, "' cannot be created: ",
            ec ? ec.message() : "a file has that name");
  const std::string lock_path = path_ + "/.lock";
  lock_ = FileLock::try_lock(lock_path, FileLock::Kind::Exclusive, true);
  if (!lock_) {
    int64_t pid = lock_holder_pid(lock_path);
    if (pid <= 0) std::ifstream(lock_path) >> pid;  // what the holder wrote (when /proc/locks does not say)
    throw RunFolderError(str_cat("run folder '", path_, "' is in use by another process",
                                 pid > 0 ? str_cat(" (PID ", pid, ")") : std::string(),
                                 ": one run per folder; pick another run.name or wait for it to finish"));
  }
  // The holder's PID for people and for systems whose /proc/locks does not show it (best effort: the
  // lock itself is what excludes).
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_->fd(), 0) == 0) (void)!::pwrite(lock_->fd(), pid.data(), pid.size(), 0);

  const std::string resume = cfg.get_string("train.resume");
  const bool overwrite = cfg.get_bool("run.overwrite");
  const bool resumes_this_run = resume == "auto" || (!resume.empty() && resume != "none" && inside(resume, path_ + "/checkpoints"));
  if (overwrite && resumes_this_run)
    throw ConfigError(str_cat(cfg.origin("run.overwrite"), ": run.overwrite deletes the run that train.resume '",
                              resume, "' (", cfg.origin("train.resume"), ") continues: set one of them"));
  const std::string previous = previous_run(path_);
  if (previous.empty() || resumes_this_run) return;
  if (!overwrite)
    throw RunFolderError(str_cat(
        "run folder '", path_, "' already holds a run (", previous, "). Continue it with train.resume=auto, start "
        "anew there with run.overwrite=true (deletes its config.yaml, train.log, metrics.jsonl and checkpoints), or "
        "pick another run.name"));
  delete_run(path_);
}

}  // namespace moh
