// FileLock: an advisory whole-file lock (flock) held for the lifetime of the object, and who holds
// a conflicting one. The kernel drops a flock lock when the process holding it exits or is killed,
// so a lock file left behind by a dead process never blocks anyone. Locks conflict between open
// files, also inside one process (two FileLocks on one path in one process exclude each other).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace moh {

class FileLock {
 public:
  enum class Kind { Shared, Exclusive };

  // Locks `path` without waiting; nullopt when another open file holds a conflicting lock. With
  // `create` a missing file is created (mode 0644). Throws moh::Error naming the file when it
  // cannot be opened (missing without `create`, permissions, ...).
  static std::optional<FileLock> try_lock(const std::string& path, Kind kind, bool create);

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();  // releases the lock

  int fd() const { return fd_; }

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// The process holding a lock on `path` according to /proc/locks, or 0 when none is listed (or the
// file cannot be examined).
int64_t lock_holder_pid(const std::string& path);

}  // namespace moh
