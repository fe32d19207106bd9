// Checkpoint files and the run's checkpoint folder. The checksum is a CRC32 (zlib) over a canonical
// byte stream built from CheckpointData itself (sections and names in sorted order, each value with
// its name, dtype and shape), so save and load compute it the same way and a reader in another
// language can recompute it from the file (docs/checkpoints.md). Durability: temp file + fsync +
// rename + directory fsync; a failed save removes its temp file.
#include "trainers/checkpoint.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <chrono>
#include <thread>

#include "core/io/checked_write.h"
#include "core/io/file_lock.h"
#include "core/io/hdf5_file.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

// Incremental CRC32 over the canonical stream; numbers go in as their little-endian bytes.
class Crc {
 public:
  void bytes(const void* p, size_t n) { crc_ = crc32_z(crc_, static_cast<const Bytef*>(p), n); }
  void name(const std::string& s) { bytes(s.c_str(), s.size() + 1); }  // with its terminating NUL
  template <class T>
  void value(T v) {
    bytes(&v, sizeof v);
  }
  uint32_t get() const { return uint32_t(crc_); }

 private:
  uLong crc_ = 0;
};

constexpr const char* kTensorSections[] = {"model", "ema", "optimizer"};

const std::map<std::string, Tensor>& tensor_section(const CheckpointData& d, int i) {
  return i == 0 ? d.model : i == 1 ? d.ema : d.optimizer;
}

std::map<std::string, Tensor>& tensor_section(CheckpointData& d, int i) {
  return i == 0 ? d.model : i == 1 ? d.ema : d.optimizer;
}

std::string hex32(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%08llx", static_cast<unsigned long long>(v));
  return buf;
}

void check_names(const std::string& where, const CheckpointData& d) {
  for (int i = 0; i < 3; ++i)
    for (const auto& [name, t] : tensor_section(d, i)) {
      MOH_CHECK(!name.empty() && (i == 2 || name.find('/') == std::string::npos), where, ": invalid ",
                kTensorSections[i], " name '", name, "'", i == 2 ? " (empty)" : " (empty or containing '/')");
      MOH_CHECK(t.defined(), where, ": ", kTensorSections[i], " tensor '", name, "' is undefined");
    }
  for (const auto& [name, state] : d.rng)
    MOH_CHECK(!name.empty() && name.find('/') == std::string::npos, where, ": invalid generator name '", name,
              "' (empty or containing '/')");
}

void write_content(Hdf5File& f, const CheckpointData& d) {
  f.set_attr_int("/", "format_version", kCheckpointFormatVersion);
  f.set_attr_string("/", "moh_version", kMohVersion);
  f.set_attr_int("/", "step", d.step);
  f.set_attr_int("/", "epoch", d.epoch);
  f.set_attr_string("/", "config", d.config_text);
  for (int i = 0; i < 3; ++i) {
    const std::string section = std::string("/") + kTensorSections[i];
    f.create_group(section);
    for (const auto& [name, t] : tensor_section(d, i)) f.write_tensor(section + "/" + name, t);
  }
  for (const char* g : {"/scheduler", "/metrics", "/data", "/rng"}) f.create_group(g);
  for (const auto& [name, v] : d.scheduler) f.set_attr_double("/scheduler", name, v);
  for (const auto& [name, v] : d.metrics) f.set_attr_double("/metrics", name, v);
  for (const auto& [name, v] : d.data) f.set_attr_int("/data", name, v);
  for (const auto& [name, state] : d.rng) {
    f.set_attr_uint("/rng/" + name, "seed", state.first);
    f.set_attr_uint("/rng/" + name, "offset", state.second);
  }
}

void read_content(const Hdf5File& f, CheckpointData& d) {
  d.step = f.attr_int("/", "step");
  d.epoch = f.attr_int("/", "epoch");
  d.config_text = f.attr_string("/", "config");
  for (int i = 0; i < 3; ++i) {
    const std::string section = std::string("/") + kTensorSections[i];
    for (const std::string& name : f.datasets(section, i == 2))
      tensor_section(d, i).emplace(name, f.read_tensor(section + "/" + name));
  }
  for (const std::string& name : f.attr_names("/scheduler")) d.scheduler[name] = f.attr_double("/scheduler", name);
  for (const std::string& name : f.attr_names("/metrics")) d.metrics[name] = f.attr_double("/metrics", name);
  for (const std::string& name : f.attr_names("/data")) d.data[name] = f.attr_int("/data", name);
  for (const std::string& name : f.groups("/rng"))
    d.rng[name] = {f.attr_uint("/rng/" + name, "seed"), f.attr_uint("/rng/" + name, "offset")};
}

// A shared lock on `path` for the duration of a read; CheckpointUnavailable when another process holds
// it exclusively (HDF5 writers do) or the file cannot be opened at all.
FileLock lock_for_reading(const std::string& path, const std::string& what) {
  std::optional<FileLock> lock;
  try {
    lock = FileLock::try_lock(path, FileLock::Kind::Shared, false);
  } catch (const Error& e) {
    throw CheckpointUnavailable(str_cat(what, " cannot be opened: ", e.what()));
  }
  if (!lock) {
    const int64_t pid = lock_holder_pid(path);
    throw CheckpointUnavailable(str_cat(what, " is locked by another process",
                                        pid > 0 ? str_cat(" (PID ", pid, ")") : std::string(),
                                        ": it is being written or is held open for writing; try again once it is closed"));
  }
  return std::move(*lock);
}

}  // namespace

uint32_t checkpoint_checksum(const CheckpointData& d) {
  Crc crc;
  for (int i = 0; i < 3; ++i)
    for (const auto& [name, t] : tensor_section(d, i)) {
      crc.name(std::string(kTensorSections[i]) + "/" + name);
      crc.name(std::string(dtype_name(t.dtype())));
      crc.value(int64_t(t.dim()));
      for (int64_t s : t.shape()) crc.value(s);
      const Tensor c = t.to(Device::cpu()).contiguous();
      crc.bytes(c.raw_data(), c.nbytes());
    }
  for (const auto& [name, v] : d.scheduler) {
    crc.name("scheduler/" + name);
    crc.value(v);
  }
  for (const auto& [name, v] : d.metrics) {
    crc.name("metrics/" + name);
    crc.value(v);
  }
  for (const auto& [name, v] : d.data) {
    crc.name("data/" + name);
    crc.value(v);
  }
  for (const auto& [name, state] : d.rng) {
    crc.name("rng/" + name);
    crc.value(state.first);
    crc.value(state.second);
  }
  crc.name("step");
  crc.value(d.step);
  crc.name("epoch");
  crc.value(d.epoch);
  crc.name("config");
  crc.bytes(d.config_text.data(), d.config_text.size());
  return crc.get();
}

void save_checkpoint(const std::string& path, const CheckpointData& data) {
  const std::string where = "cannot save checkpoint '" + path + "'";
  check_names(where, data);
  const fs::path parent = fs::path(path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  std::error_code ec;
  MOH_CHECK(fs::is_directory(dir, ec), where, ": directory '", dir, "' does not exist");
  const std::string tmp = path + ".tmp";
  try {
    Hdf5File f(tmp, Hdf5File::Mode::Create);
    write_content(f, data);
    f.set_attr_uint("/", "crc32", checkpoint_checksum(data));
    f.set_attr_int("/", "complete", 1);  // last: a file without it never finished saving
    f.close();
    fsync_file(tmp);
    MOH_CHECK(::rename(tmp.c_str(), path.c_str()) == 0, "cannot rename '", tmp,
              "' over it: ", std::strerror(errno));
  } catch (const Error& e) {
    fs::remove(tmp, ec);
    MOH_FAIL(where, ": ", e.what());
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  fsync_directory(dir);
}

CheckpointData load_checkpoint(const std::string& path) {
  const std::string what = "checkpoint '" + path + "'";
  std::error_code ec;
  MOH_CHECK(fs::is_regular_file(path, ec), what, " does not exist (or is not a file)");
  const FileLock reading = lock_for_reading(path, what);
  CheckpointData d;
  std::string corrupt;  // why the file is unusable, when it is
  int64_t version = 0;
  uint64_t stored = 0;
  try {
    Hdf5File f(path, Hdf5File::Mode::Read);
    version = f.has_attr("/", "format_version") ? f.attr_int("/", "format_version") : 0;
    if (version < 1) {
      corrupt = "no format_version attribute (not a moh checkpoint)";
    } else if (version <= kCheckpointFormatVersion) {
      if (!f.has_attr("/", "complete")) {
        corrupt = "no 'complete' marker (the save did not finish)";
      } else {
        stored = f.attr_uint("/", "crc32");
        read_content(f, d);
      }
    }
  } catch (const Error& e) {
    corrupt = e.what();
  }
  MOH_CHECK(corrupt.empty(), what, " is corrupt: ", corrupt);
  MOH_CHECK(version <= kCheckpointFormatVersion, what, " was written by a newer moh (checkpoint format ", version,
            "; this build reads up to ", kCheckpointFormatVersion, ")");
  const uint32_t computed = checkpoint_checksum(d);
  MOH_CHECK(computed == stored, what, " is corrupt: checksum mismatch (stored ", hex32(stored), ", content ",
            hex32(computed), "; truncated or modified)");
  return d;
}

// ---- CheckpointManager ----

CheckpointManager::CheckpointManager(std::string dir, int64_t keep_last, std::string best_metric, std::string mode)
    : dir_(std::move(dir)), keep_last_(keep_last), best_metric_(std::move(best_metric)), maximize_(mode == "max") {
  MOH_CHECK(!dir_.empty(), "CheckpointManager: the checkpoint directory is empty");
  MOH_CHECK(keep_last_ >= 0, "CheckpointManager: keep_last must be >= 0 (0 keeps all), got ", keep_last_);
  MOH_CHECK(mode == "min" || mode == "max", "CheckpointManager: best-metric mode must be 'min' or 'max', got '",
            mode, "'");
}

std::string CheckpointManager::path_for(int64_t step) const {
  MOH_CHECK(step >= 0, "CheckpointManager: step must be >= 0, got ", step);
  char name[40];
  std::snprintf(name, sizeof name, "step_%08lld.h5", static_cast<long long>(step));
  return (fs::path(dir_) / name).string();
}

namespace {

// The step of a file named exactly as path_for names it, or -1.
int64_t step_of(const std::string& filename) {
  if (filename.size() < 8 + 8 || filename.rfind("step_", 0) != 0 || !filename.ends_with(".h5")) return -1;
  const std::string digits = filename.substr(5, filename.size() - 8);
  if (digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  const int64_t step = std::stoll(digits);
  char canonical[40];
  std::snprintf(canonical, sizeof canonical, "step_%08lld.h5", static_cast<long long>(step));
  return filename == canonical ? step : -1;
}

}  // namespace

std::vector<std::string> CheckpointManager::list() const {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const int64_t step = step_of(it->path().filename().string());
    if (step >= 0 && it->is_regular_file(ec)) found.emplace_back(step, it->path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [step, path] : found) out.push_back(std::move(path));
  return out;
}

std::string CheckpointManager::save(int64_t step, const CheckpointData& data) {
  const std::string path = path_for(step);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  MOH_CHECK(!ec && fs::is_directory(dir_, ec), "CheckpointManager: cannot create the checkpoint directory '", dir_,
            "': ", ec ? ec.message() : "a file has that name");
  save_checkpoint(path, data);

  std::vector<std::string> files = list();
  std::vector<std::string> keep{path};
  if (keep_last_ == 0 || int64_t(files.size()) <= keep_last_)
    keep.insert(keep.end(), files.begin(), files.end());
  else
    keep.insert(keep.end(), files.end() - keep_last_, files.end());
  if (auto b = best()) keep.push_back(*b);
  for (const std::string& f : files) {
    if (std::find(keep.begin(), keep.end(), f) != keep.end()) continue;
    fs::remove(f, ec);
    if (ec) warnings_.push_back("could not delete old checkpoint '" + f + "': " + ec.message());
  }
  // Temp files of saves that never finished (a crash or a kill mid-save).
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.ends_with(".h5.tmp") && step_of(name.substr(0, name.size() - 4)) >= 0) fs::remove(it->path(), ec);
  }
  return path;
}

std::optional<std::string> CheckpointManager::best() const {
  if (best_metric_.empty()) return std::nullopt;
  std::optional<std::string> best;
  double best_value = 0;
  for (const std::string& path : list()) {
    double v = NAN;
    try {
      Hdf5File f(path, Hdf5File::Mode::Read);
      if (!f.has_attr("/", "complete") || !f.has_attr("/metrics", best_metric_)) continue;
      v = f.attr_double("/metrics", best_metric_);
    } catch (const Error&) {
      continue;  // unreadable: never the best
    }
    if (std::isnan(v)) continue;
    if (!best || (maximize_ ? v > best_value : v < best_value)) {
      best = path;
      best_value = v;
    }
  }
  return best;
}

CheckpointData CheckpointManager::load_when_available(const std::string& path) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(busy_wait_s_);
  for (;;) {
    try {
      return load_checkpoint(path);
    } catch (const CheckpointUnavailable&) {
      if (std::chrono::steady_clock::now() >= deadline) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::optional<CheckpointManager::Resume> CheckpointManager::scan_latest() {
  const std::vector<std::string> files = list();
  for (auto it = files.rbegin(); it != files.rend(); ++it) {
    try {
      return Resume{*it, load_when_available(*it)};
    } catch (const CheckpointUnavailable&) {
      throw;  // not damaged: falling back to an older checkpoint would redo or evaluate the wrong steps
    } catch (const Error& e) {
      warnings_.push_back(std::string("skipping ") + e.what());
    }
  }
  return std::nullopt;
}

std::optional<std::string> CheckpointManager::latest_valid() {
  if (auto r = scan_latest()) return r->path;
  return std::nullopt;
}

std::optional<CheckpointManager::Resume> CheckpointManager::resolve_resume(const std::string& spec) {
  if (spec.empty() || spec == "none") return std::nullopt;
  if (spec == "auto") return scan_latest();
  try {
    return Resume{spec, load_when_available(spec)};
  } catch (const CheckpointUnavailable& e) {
    throw CheckpointUnavailable(str_cat("train.resume: ", e.what()));
  } catch (const Error& e) {
    MOH_FAIL("train.resume: ", e.what());
  }
}

std::vector<std::string> CheckpointManager::take_warnings() { return std::exchange(warnings_, {}); }

}  // namespace moh
