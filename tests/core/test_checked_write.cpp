// Checked writes (core/io/checked_write.h) and file locks (core/io/file_lock.h): a failed write is an
// error that leaves no partial content (atomic replace keeps the old file; an append is cut back), a
// torn last line is repaired on open, and locks exclude each other and name their holder.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/io/checked_write.h"
#include "core/io/file_lock.h"
#include "tests/test_util.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `body` in a child process whose files may not grow past `limit_bytes` (RLIMIT_FSIZE: writes
// past it fail with EFBIG, as on a full disk); returns the child's exit status (0 = body returned).
int with_file_size_limit(rlim_t limit_bytes, const std::function<void()>& body) {
  const pid_t child = fork();
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{limit_bytes, limit_bytes};
    setrlimit(RLIMIT_FSIZE, &limit);
    try {
      body();
    } catch (...) {
      _exit(3);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

using CheckedWrite = test::TempDirTest;

TEST_F(CheckedWrite, AtomicReplaceWritesTheContentAndLeavesNoTempFile) {
  const std::string p = path("a.yaml");
  write_file_atomically(p, "one\n");
  write_file_atomically(p, "two\n");
  EXPECT_EQ(read_all(p), "two\n");
  EXPECT_FALSE(fs::exists(p + ".tmp"));
}

TEST_F(CheckedWrite, AtomicReplaceThatCannotWriteKeepsTheOldFileAndSaysWhy) {
  const std::string p = path("config.yaml");
  write_file_atomically(p, "old\n");
  const std::string big(64 << 10, 'x');
  EXPECT_EQ(with_file_size_limit(4096,
                                 [&] {
                                   try {
                                     write_file_atomically(p, big);
                                   } catch (const Error& e) {
                                     if (std::string(e.what()).find("File too large") != std::string::npos) _exit(7);
                                   }
                                 }),
            7);
  EXPECT_EQ(read_all(p), "old\n");
  EXPECT_FALSE(fs::exists(p + ".tmp"));
  test::expect_error([&] { write_file_atomically(path("no/such/folder/x"), "x"); }, {"no/such/folder/x"});
}

TEST_F(CheckedWrite, PiecewiseAtomicWriteAppearsWholeOnCommitOnly) {
  const std::string p = path("array.npy");
  write_file_atomically(p, "old");
  {
    AtomicFileWriter out(p);
    out.write("new ");
    out.write(std::string(5000, 'z'));
    EXPECT_EQ(out.size(), 5004u);
    EXPECT_EQ(read_all(p), "old");  // readers still see the old content
  }  // abandoned (an exception on the way): the temp file goes, the old file stays
  EXPECT_EQ(read_all(p), "old");
  EXPECT_FALSE(fs::exists(p + ".tmp"));
  AtomicFileWriter out(p);
  out.write("new ");
  out.write("content");
  out.commit();
  EXPECT_EQ(read_all(p), "new content");
  EXPECT_FALSE(fs::exists(p + ".tmp"));
  test::expect_error([&] { out.write("more"); }, {p, "already committed"});
}

TEST_F(CheckedWrite, AppendThatFailsRemovesItsPartialRecord) {
  const std::string p = path("metrics.jsonl");
  {
    AppendOnlyFile f(p);
    f.append_line("{\"step\": 1}");
  }
  const size_t before = read_all(p).size();
  // The limit leaves room for part of the next record only: the short write must be cut back.
  EXPECT_EQ(with_file_size_limit(rlim_t(before + 10),
                                 [&] {
                                   AppendOnlyFile f(p);
                                   try {
                                     f.append_line(std::string(100, 'y'));
                                   } catch (const Error& e) {
                                     if (std::string(e.what()).find("partial record was removed") != std::string::npos)
                                       _exit(7);
                                   }
                                 }),
            7);
  EXPECT_EQ(read_all(p), "{\"step\": 1}\n");
}

TEST_F(CheckedWrite, OpeningCutsATornLastLine) {
  const std::string p = write("metrics.jsonl", "{\"step\": 1}\n{\"step\": 2}\n{\"ste");
  AppendOnlyFile f(p);
  EXPECT_EQ(f.repaired(), 5);
  f.append_line("{\"step\": 3}");
  EXPECT_EQ(read_all(p), "{\"step\": 1}\n{\"step\": 2}\n{\"step\": 3}\n");
  // A file of one torn line becomes empty; a clean file is left alone.
  const std::string q = write("torn.jsonl", std::string(5000, 'z'));
  EXPECT_EQ(AppendOnlyFile(q).repaired(), 5000);
  EXPECT_EQ(read_all(q), "");
  EXPECT_EQ(AppendOnlyFile(p).repaired(), 0);
}

TEST_F(CheckedWrite, ExclusiveLocksExcludeEachOtherAndNameTheirHolder) {
  const std::string p = path(".lock");
  std::optional<FileLock> first = FileLock::try_lock(p, FileLock::Kind::Exclusive, true);
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(FileLock::try_lock(p, FileLock::Kind::Exclusive, true).has_value());
  EXPECT_FALSE(FileLock::try_lock(p, FileLock::Kind::Shared, false).has_value());
  EXPECT_EQ(lock_holder_pid(p), int64_t(getpid()));
  first.reset();
  EXPECT_TRUE(FileLock::try_lock(p, FileLock::Kind::Shared, false).has_value());
  EXPECT_EQ(lock_holder_pid(p), 0);
  test::expect_error([&] { FileLock::try_lock(path("missing"), FileLock::Kind::Shared, false); }, {"missing"});
}

TEST_F(CheckedWrite, ALockDiesWithItsProcess) {
  const std::string p = path(".lock");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  if (child == 0) {
    auto lock = FileLock::try_lock(p, FileLock::Kind::Exclusive, true);
    const char c = lock ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  EXPECT_FALSE(FileLock::try_lock(p, FileLock::Kind::Exclusive, true).has_value());
  EXPECT_EQ(lock_holder_pid(p), int64_t(child));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(FileLock::try_lock(p, FileLock::Kind::Exclusive, true).has_value());
  close(ready[0]);
  close(ready[1]);
}

}  // namespace
}  // namespace moh
