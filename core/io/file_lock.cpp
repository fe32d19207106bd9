// FileLock over flock(2); the holder's PID from /proc/locks (see file_lock.h).
#include "core/io/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "core/error.h"

namespace moh {

std::optional<FileLock> FileLock::try_lock(const std::string& path, Kind kind, bool create) {
  const int fd = ::open(path.c_str(), (create ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC, 0644);
  MOH_CHECK(fd >= 0, "cannot open '", path, "' to lock it: ", std::strerror(errno));
  if (::flock(fd, (kind == Kind::Exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0) return FileLock(fd);
  const int err = errno;
  ::close(fd);
  MOH_CHECK(err == EWOULDBLOCK, "cannot lock '", path, "': ", std::strerror(err));
  return std::nullopt;
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor of the open file releases its lock
}

int64_t lock_holder_pid(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  // Lines look like "1: FLOCK  ADVISORY  WRITE 4242 08:01:1311 0 EOF" (device as hex major:minor);
  // waiting requests are marked "->" and are not holders.
  std::ifstream locks("/proc/locks");
  for (std::string line; std::getline(locks, line);) {
    if (line.find("->") != std::string::npos) continue;
    std::istringstream in(line);
    std::string id, type, mode, access, device;
    int64_t pid = 0;
    if (!(in >> id >> type >> mode >> access >> pid >> device)) continue;
    unsigned major = 0, minor = 0;
    unsigned long long inode = 0;
    if (std::sscanf(device.c_str(), "%x:%x:%llu", &major, &minor, &inode) != 3) continue;
    if (inode == st.st_ino && major == ::major(st.st_dev) && minor == ::minor(st.st_dev)) return pid;
  }
  return 0;
}

}  // namespace moh
