// The frame of every libFuzzer target in fuzz/ (docs/reliability.md, "Fuzzing"). A target file is
// fuzz/<target>.cpp holding one MOH_FUZZ_TARGET(read, seeds):
//   read(data, size)  hands the input to one file reader the way a user's file reaches it. Throwing
//                     moh::Error is the expected answer to bad input; anything else is a finding: a
//                     crash, a sanitizer report, a leak, a timeout, or another exception type escaping.
//   seeds(add)        writes the target's seed corpus with our own writers: add(name, bytes) per file
//                     (scripts/fuzz.sh --seeds runs it with MOH_FUZZ_WRITE_SEEDS=<folder>).
// Readers that take a path read the input from a scratch file (scratch_file); the folder is private to
// the process and removed at exit.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"

namespace moh::fuzz {

using Bytes = std::vector<uint8_t>;
using AddSeed = std::function<void(const std::string& name, const Bytes& bytes)>;

inline void write_bytes(const std::filesystem::path& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  MOH_CHECK(out.good(), "fuzz: cannot write '", path.string(), "'");
}

class ScratchDir {
 public:
  ScratchDir()
      : path_(std::filesystem::temp_directory_path() / ("moh_fuzz_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline const std::filesystem::path& scratch_dir() {
  static const ScratchDir dir;
  return dir.path();
}

// Writes the bytes to scratch_dir()/name; returns the path.
inline std::string scratch_file(const std::string& name, const uint8_t* data, size_t size) {
  const std::filesystem::path path = scratch_dir() / name;
  write_bytes(path, data, size);
  return path.string();
}

inline void write_seeds(const std::filesystem::path& dir, void (*seeds)(const AddSeed&)) {
  std::filesystem::create_directories(dir);
  seeds([&](const std::string& name, const Bytes& bytes) { write_bytes(dir / name, bytes.data(), bytes.size()); });
}

}  // namespace moh::fuzz

#define MOH_FUZZ_TARGET(read, seeds)                                                   \
  extern "C" int LLVMFuzzerInitialize(int*, char***) {                                 \
    if (const char* dir = std::getenv("MOH_FUZZ_WRITE_SEEDS")) {                       \
      ::moh::fuzz::write_seeds(dir, seeds);                                            \
      std::exit(0);                                                                    \
    }                                                                                  \
    return 0;                                                                          \
  }                                                                                    \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {            \
    try {                                                                              \
      read(data, size);                                                                \
    } catch (const ::moh::Error&) {                                                    \
    }                                                                                  \
    return 0;                                                                          \
  }
