// The POSIX file-descriptor pieces the binary readers share (safetensors, .npy, .npz): a descriptor
// closed on scope exit, and an exact positioned read that retries interrupted and partial reads.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

namespace moh {

// Owns `fd` (-1: none) and closes it on destruction. Not copyable.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(Fd&& other) noexcept : fd(other.fd) { other.fd = -1; }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// Reads exactly n bytes at `offset`; false on a short read or an error (errno says which).
inline bool read_at(int fd, void* dst, uint64_t n, uint64_t offset) {
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, std::min<uint64_t>(n, 1u << 30), off_t(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= uint64_t(got);
    offset += uint64_t(got);
  }
  return true;
}

}  // namespace moh
