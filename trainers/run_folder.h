// RunFolder: run.dir/run.name as the property of one run, claimed before anything is written there.
// Claiming it (the process that writes, rank 0 in data-parallel runs):
//  - takes an exclusive lock on <folder>/.lock for the object's lifetime (core/io/file_lock.h): a
//    second process on the same folder fails naming the PID holding it, and a lock left behind by a
//    killed process does not block (the kernel released it with the process);
//  - refuses to start in a folder that holds another run (its config.yaml or checkpoints) unless the
//    run resumes it (train.resume: auto, or a checkpoint inside this folder) or run.overwrite is set,
//    which deletes the old run's files (config.yaml, train.log, metrics.jsonl, checkpoints/) first.
// run.name '.'/'..' and an empty run.dir are rejected by the schema (config_common.cpp).
#pragma once

#include <optional>
#include <string>

#include "core/error.h"
#include "core/io/file_lock.h"
#include "trainers/config.h"

namespace moh {

// The folder cannot be used by this run as asked (held by another process, or holding another run).
// A usage error: `moh train` exits 2.
class RunFolderError : public Error {
 public:
  using Error::Error;
};

class RunFolder {
 public:
  // run.dir/run.name.
  static std::string path_of(const Config& cfg);

  // Claims the folder for the run `cfg` describes (creating it), as above.
  explicit RunFolder(const Config& cfg);

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::optional<FileLock> lock_;
};

}  // namespace moh
