// Checked file writes (see checked_write.h).
#include "core/io/checked_write.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "core/error.h"

namespace moh {
namespace {

// Writes all of `data` to `fd`, retrying short writes and EINTR; errno of the failure, or 0.
int write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    data += n;
    size -= size_t(n);
  }
  return 0;
}

std::string parent_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

}  // namespace

void fsync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  MOH_CHECK(fd >= 0, "cannot reopen '", path, "' to fsync it: ", std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  MOH_CHECK(rc == 0, "fsync of '", path, "' failed: ", std::strerror(err));
}

void fsync_directory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECTORY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

AtomicFileWriter::AtomicFileWriter(const std::string& path) : path_(path), tmp_(path + ".tmp") {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  MOH_CHECK(fd_ >= 0, "cannot write '", path_, "': cannot create '", tmp_, "': ", std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(tmp_.c_str());
}

void AtomicFileWriter::fail(int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  MOH_FAIL("cannot write '", path_, "': ", std::strerror(err));
}

void AtomicFileWriter::write(const void* data, size_t size) {
  MOH_CHECK(fd_ >= 0, "cannot write '", path_, "': the file is already committed or failed");
  if (const int err = write_all(fd_, static_cast<const char*>(data), size)) fail(err);
  size_ += size;
}

void AtomicFileWriter::commit() {
  MOH_CHECK(fd_ >= 0, "cannot write '", path_, "': the file is already committed or failed");
  if (::fsync(fd_) != 0) fail(errno);
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0 || ::rename(tmp_.c_str(), path_.c_str()) != 0) fail(errno);
  fsync_directory(parent_of(path_));
}

void write_file_atomically(const std::string& path, std::string_view content) {
  AtomicFileWriter out(path);
  out.write(content);
  out.commit();
}

AppendOnlyFile::AppendOnlyFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  MOH_CHECK(fd_ >= 0, "cannot open '", path, "' for appending: ", std::strerror(errno));
  struct stat st {};
  MOH_CHECK(::fstat(fd_, &st) == 0, "cannot examine '", path, "': ", std::strerror(errno));
  // Find the end of the last complete line, reading backwards in blocks.
  off_t end = st.st_size;
  char block[4096];
  while (end > 0) {
    const off_t start = end > off_t(sizeof block) ? end - off_t(sizeof block) : 0;
    const ssize_t n = ::pread(fd_, block, size_t(end - start), start);
    MOH_CHECK(n == end - start, "cannot read '", path, "': ", n < 0 ? std::strerror(errno) : "short read");
    const void* nl = memrchr(block, '\n', size_t(n));
    if (nl) {
      end = start + (static_cast<const char*>(nl) - block) + 1;
      break;
    }
    end = start;
  }
  if (end < st.st_size) {
    MOH_CHECK(::ftruncate(fd_, end) == 0, "cannot cut the torn last line off '", path, "': ", std::strerror(errno));
    repaired_ = int64_t(st.st_size - end);
  }
}

AppendOnlyFile::AppendOnlyFile(AppendOnlyFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), repaired_(other.repaired_) {}

AppendOnlyFile& AppendOnlyFile::operator=(AppendOnlyFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    repaired_ = other.repaired_;
  }
  return *this;
}

AppendOnlyFile::~AppendOnlyFile() {
  if (fd_ >= 0) ::close(fd_);
}

void AppendOnlyFile::append_line(std::string_view record) {
  MOH_CHECK(fd_ >= 0, "append to '", path_, "': the file is not open");
  struct stat st {};
  MOH_CHECK(::fstat(fd_, &st) == 0, "cannot examine '", path_, "': ", std::strerror(errno));
  std::string line(record);
  line += '\n';
  const int err = write_all(fd_, line.data(), line.size());
  if (err == 0) return;
  const bool cut = ::ftruncate(fd_, st.st_size) == 0;
  MOH_FAIL("cannot append to '", path_, "': ", std::strerror(err),
           cut ? " (the partial record was removed)" : " (and the partial record could not be removed)");
}

}  // namespace moh
