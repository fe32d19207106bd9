// Writes whose every failure is an error: a whole file replaced atomically (temp file, fsync,
// rename, directory fsync: readers see the old content or the new, never a part), written at once or
// in pieces (AtomicFileWriter, for files too large to build in memory), and an append-only
// text file whose records are either wholly written or not at all (a failed or short write is cut
// back off the file, so no half line is left). Errors are moh::Error naming the file and the
// system's reason (e.g. "No space left on device").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace moh {

// Replaces `path` by `content` atomically (see above); on failure `path` is untouched and the temp
// file is removed.
void write_file_atomically(const std::string& path, std::string_view content);

// A file written in pieces and published atomically: the pieces go to `path` + ".tmp"; commit() fsyncs
// it, renames it over `path` and fsyncs the directory. Destroyed (or failed) before commit(), the temp
// file is removed and `path` is untouched. Not copyable.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(const std::string& path);
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }  // bytes written so far
  void write(const void* data, size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  void commit();

 private:
  [[noreturn]] void fail(int err);  // removes the temp file and throws naming path_ and err
  std::string path_, tmp_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// fsync of a file (failures are errors) and of a directory (best effort: some filesystems refuse it).
void fsync_file(const std::string& path);
void fsync_directory(const std::string& path);

class AppendOnlyFile {
 public:
  AppendOnlyFile() = default;
  // Opens (creating) `path` for appending. A last line without its newline (a process killed in the
  // middle of a write) is cut off first, so the next record starts a line; `repaired` tells.
  explicit AppendOnlyFile(const std::string& path);
  AppendOnlyFile(AppendOnlyFile&& other) noexcept;
  AppendOnlyFile& operator=(AppendOnlyFile&& other) noexcept;
  AppendOnlyFile(const AppendOnlyFile&) = delete;
  AppendOnlyFile& operator=(const AppendOnlyFile&) = delete;
  ~AppendOnlyFile();

  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  // Bytes of a torn last line removed on open (0 when the file ended cleanly).
  int64_t repaired() const { return repaired_; }
  // Appends `record` plus '\n' in one write; on failure the file is cut back to its size before.
  void append_line(std::string_view record);

 private:
  std::string path_;
  int fd_ = -1;
  int64_t repaired_ = 0;
};

}  // namespace moh
