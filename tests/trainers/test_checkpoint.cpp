// Checkpoints: exact round trip of every section and dtype (and into a Module), the on-disk layout,
// corruption detection (flipped data byte, modified attribute, truncation, unfinished or foreign
// files), atomic saves (a child killed mid-save, a hand-made partial .tmp), keep_last + best pruning,
// train.resume modes, and errors for bad names and unusable directories.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/factory.h"
#include "core/io/hdf5_file.h"
#include "core/ops.h"
#include "tests/test_util.h"
#include "tests/trainers/trainer_test_util.h"
#include "trainers/checkpoint.h"

namespace moh {
namespace {

namespace fs = std::filesystem;
using trainer_test::expect_error;
using trainer_test::expect_identical;
using trainer_test::TinyMlp;

class Checkpoint : public test::TempDirTest {};

std::string read_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// Every section filled; the model holds every dtype, a 0-d and an empty tensor, and a float32
// pattern (1000.5, 1001.5, ...) that tests can find in the file.
CheckpointData make_data(int64_t step, double metric = 1.0) {
  CheckpointData d;
  d.step = step;
  d.epoch = step / 10;
  d.config_text = "run:\n  name: tiny  # ünïcode\ntrain:\n  steps: " + std::to_string(step) + "\n";
  Tensor base = arange(-6.0, 6.0, 1.0, DType::Float64).view({3, 4});
  d.model = {
      {"blocks.0.attn.qkv.weight", mul(base, 0.37).to(DType::Float32)},
      {"f64", mul(base, 1.0 / 3.0)},
      {"bf16", mul(base, 0.3).to(DType::BFloat16)},
      {"f16", mul(base, 0.3).to(DType::Float16)},
      {"i32", base.to(DType::Int32)},
      {"i64", mul(base, 1e12).to(DType::Int64)},
      {"u8", add(base, 6.0).to(DType::UInt8)},
      {"mask", gt(base, 0.5)},
      {"scale", scalar_tensor(2.5, DType::Float32)},
      {"empty", zeros({0, 3})},
      {"pattern", add(arange(0.0, 4096.0, 1.0, DType::Float32), 1000.5)},
      {"transposed", mul(base, 0.5).to(DType::Float32).t()},
  };
  d.ema = {{"blocks.0.attn.qkv.weight", mul(base, 0.36).to(DType::Float32)}};
  d.optimizer = {{"blocks.0.attn.qkv.weight/exp_avg", full({3, 4}, 0.125)},
                 {"blocks.0.attn.qkv.weight/exp_avg_sq", full({3, 4}, 0.0625)},
                 {"blocks.0.attn.qkv.weight/step", scalar_tensor(double(step), DType::Int64)},
                 {"step", scalar_tensor(double(step), DType::Int64)}};
  d.scheduler = {{"last_lr", 3e-4}, {"base_lr", 1e-3}, {"inf", INFINITY}};
  d.rng = {{"dropout", {42, 1000 + uint64_t(step)}}, {"init", {0xFFFFFFFFFFFFFFFFull, 0}}};
  d.data = {{"epoch", d.epoch}, {"index", 12345}, {"shuffle_seed", -7}};
  d.metrics = {{"val_loss", metric}, {"train_loss", 2.5}};
  return d;
}

void expect_same_data(const CheckpointData& a, const CheckpointData& b) {
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.epoch, b.epoch);
  EXPECT_EQ(a.config_text, b.config_text);
  for (const auto& [sa, sb] : {std::pair{&a.model, &b.model}, {&a.ema, &b.ema}, {&a.optimizer, &b.optimizer}}) {
    ASSERT_EQ(sa->size(), sb->size());
    for (const auto& [name, t] : *sa) {
      ASSERT_TRUE(sb->count(name)) << name;
      const Tensor& u = sb->at(name);
      EXPECT_TRUE(t.is_contiguous() || u.is_contiguous()) << name;
      ASSERT_EQ(t.dtype(), u.dtype()) << name;
      ASSERT_EQ(t.shape(), u.shape()) << name;
      const Tensor tc = t.contiguous(), uc = u.contiguous();
      EXPECT_EQ(std::memcmp(tc.raw_data(), uc.raw_data(), tc.nbytes()), 0) << name;
    }
  }
  EXPECT_EQ(a.scheduler, b.scheduler);
  EXPECT_EQ(a.rng, b.rng);
  EXPECT_EQ(a.data, b.data);
  EXPECT_EQ(a.metrics, b.metrics);
}

TEST_F(Checkpoint, RoundTripsEverySectionAndDtype) {
  const CheckpointData d = make_data(200);
  const std::string p = path("c.h5");
  save_checkpoint(p, d);
  EXPECT_FALSE(fs::exists(p + ".tmp"));
  const CheckpointData back = load_checkpoint(p);
  expect_same_data(d, back);
  EXPECT_EQ(checkpoint_checksum(back), checkpoint_checksum(d));
  // Overwriting replaces the whole file.
  CheckpointData next = make_data(300);
  next.ema.clear();
  save_checkpoint(p, next);
  expect_same_data(next, load_checkpoint(p));
}

TEST_F(Checkpoint, LayoutMatchesTheDocs) {
  const CheckpointData d = make_data(200);
  const std::string p = path("c.h5");
  save_checkpoint(p, d);
  Hdf5File f(p, Hdf5File::Mode::Read);
  EXPECT_EQ(f.attr_names("/"), (std::vector<std::string>{"complete", "config", "crc32", "epoch", "format_version",
                                                         "moh_version", "step"}));
  EXPECT_EQ(f.attr_int("/", "format_version"), kCheckpointFormatVersion);
  EXPECT_EQ(f.attr_string("/", "moh_version"), kMohVersion);
  EXPECT_EQ(f.attr_int("/", "step"), 200);
  EXPECT_EQ(f.attr_int("/", "epoch"), 20);
  EXPECT_EQ(f.attr_int("/", "complete"), 1);
  EXPECT_EQ(f.attr_uint("/", "crc32"), checkpoint_checksum(d));
  EXPECT_EQ(f.attr_string("/", "config"), d.config_text);
  EXPECT_EQ(f.groups("/"),
            (std::vector<std::string>{"data", "ema", "metrics", "model", "optimizer", "rng", "scheduler"}));
  EXPECT_EQ(f.datasets("/model").size(), d.model.size());
  EXPECT_EQ(f.datasets("/ema"), std::vector<std::string>{"blocks.0.attn.qkv.weight"});
  EXPECT_EQ(f.datasets("/optimizer"), std::vector<std::string>{"step"});
  EXPECT_EQ(f.groups("/optimizer"), std::vector<std::string>{"blocks.0.attn.qkv.weight"});
  EXPECT_EQ(f.dataset_dtype("/model/bf16"), DType::BFloat16);
  EXPECT_EQ(f.attr_string("/model/bf16", "dtype"), "bfloat16");
  EXPECT_EQ(f.attr_double("/scheduler", "last_lr"), 3e-4);
  EXPECT_EQ(f.attr_uint("/rng/dropout", "seed"), 42u);
  EXPECT_EQ(f.attr_uint("/rng/dropout", "offset"), 1200u);
  EXPECT_EQ(f.attr_int("/data", "shuffle_seed"), -7);
  EXPECT_EQ(f.attr_double("/metrics", "val_loss"), 1.0);
}

TEST_F(Checkpoint, ModuleStateRoundTripsThroughACheckpoint) {
  TinyMlp a(3, 5, 2, DType::Float32, 1), b(3, 5, 2, DType::Float32, 2);
  CheckpointData d;
  for (const auto& [name, t] : a.state_dict()) d.model[name] = t;
  const std::string p = path("mlp.h5");
  save_checkpoint(p, d);
  b.load_state_dict(load_checkpoint(p).model);
  for (const auto& [name, t] : a.state_dict()) expect_identical(b.state_dict().at(name), t, name);
}

TEST_F(Checkpoint, ChecksumCatchesAFlippedDataByteAndAModifiedAttribute) {
  const std::string p = path("c.h5");
  save_checkpoint(p, make_data(200));
  std::string bytes = read_bytes(p);
  const float pattern[4] = {1000.5f, 1001.5f, 1002.5f, 1003.5f};
  const size_t at = bytes.find(std::string(reinterpret_cast<const char*>(pattern), sizeof pattern));
  ASSERT_NE(at, std::string::npos);
  bytes[at + 4096] ^= 0x01;  // one bit of "pattern"[1024]
  write_bytes(p, bytes);
  expect_error([&] { load_checkpoint(p); }, "checkpoint '" + p + "' is corrupt: checksum mismatch");
  expect_error([&] { load_checkpoint(p); }, "truncated or modified");

  // A legitimate HDF5 edit that bypasses save_checkpoint is caught too.
  save_checkpoint(p, make_data(200));
  Hdf5File(p, Hdf5File::Mode::ReadWrite).set_attr_int("/", "step", 201);
  expect_error([&] { load_checkpoint(p); }, "checksum mismatch");
  save_checkpoint(p, make_data(200));
  Hdf5File(p, Hdf5File::Mode::ReadWrite).set_attr_double("/scheduler", "last_lr", 3.5e-4);
  expect_error([&] { load_checkpoint(p); }, "checksum mismatch");
}

TEST_F(Checkpoint, TruncatedEmptyAndForeignFilesAreCorrupt) {
  const std::string p = path("c.h5");
  save_checkpoint(p, make_data(200));
  const std::string bytes = read_bytes(p);
  for (size_t keep : {bytes.size() - 1, bytes.size() / 2, size_t(100), size_t(0)}) {
    write_bytes(p, bytes.substr(0, keep));
    expect_error([&] { load_checkpoint(p); }, "checkpoint '" + p + "' is corrupt: ");
  }
  write_bytes(p, bytes.substr(0, bytes.size() / 2));
  expect_error([&] { load_checkpoint(p); }, "truncated");

  // An HDF5 file that is not a checkpoint, one whose save never finished, one from the future.
  Hdf5File(p, Hdf5File::Mode::Create).write_tensor("/model/w", ones({2}));
  expect_error([&] { load_checkpoint(p); }, "is corrupt: no format_version attribute (not a moh checkpoint)");
  {
    Hdf5File f(p, Hdf5File::Mode::Create);
    f.set_attr_int("/", "format_version", kCheckpointFormatVersion);
    f.write_tensor("/model/w", ones({2}));
  }
  expect_error([&] { load_checkpoint(p); }, "is corrupt: no 'complete' marker (the save did not finish)");
  Hdf5File(p, Hdf5File::Mode::Create).set_attr_int("/", "format_version", 99);
  expect_error([&] { load_checkpoint(p); }, "was written by a newer moh (checkpoint format 99");
  expect_error([&] { load_checkpoint(path("missing.h5")); }, "missing.h5' does not exist");
}

TEST_F(Checkpoint, SaveErrorsLeaveThePreviousFileAndNoTemp) {
  const std::string p = path("c.h5");
  const CheckpointData good = make_data(100);
  save_checkpoint(p, good);
  auto expect_save_error = [&](CheckpointData d, const std::string& phrase) {
    expect_error([&] { save_checkpoint(p, d); }, phrase);
    EXPECT_FALSE(fs::exists(p + ".tmp")) << phrase;
    expect_same_data(good, load_checkpoint(p));
  };
  CheckpointData d = make_data(200);
  d.model["a/b"] = ones({1});
  expect_save_error(d, "invalid model name 'a/b'");
  d = make_data(200);
  d.ema[""] = ones({1});
  expect_save_error(d, "invalid ema name ''");
  d = make_data(200);
  d.rng["x/y"] = {1, 2};
  expect_save_error(d, "invalid generator name 'x/y'");
  d = make_data(200);
  d.model["w"] = Tensor();
  expect_save_error(d, "model tensor 'w' is undefined");
  // Fails half way through writing: "a" is a dataset, so "a/b" cannot go below it.
  d = make_data(200);
  d.optimizer["a"] = ones({1});
  d.optimizer["a/b"] = ones({1});
  expect_save_error(d, "cannot save checkpoint '" + p + "': ");

  expect_error([&] { save_checkpoint(path("nope/c.h5"), good); },
               "directory '" + path("nope") + "' does not exist");
  expect_error([&] { save_checkpoint("/proc/moh_ckpt_test.h5", good); },
               "cannot save checkpoint '/proc/moh_ckpt_test.h5'");
  EXPECT_FALSE(fs::exists("/proc/moh_ckpt_test.h5.tmp"));
}

// A child process saves big checkpoints in a loop and is SIGKILLed while one is being written:
// every step_*.h5 left must load, and the newest valid one is what auto-resume picks.
TEST_F(Checkpoint, KilledSaveLeavesThePreviousCheckpointLoadable) {
  CheckpointManager mgr(dir_.string(), 0);
  mgr.save(100, make_data(100));
  CheckpointData big = make_data(200);
  big.model["big"] = full({4 << 20}, 0.5);  // 16 MiB
  const std::string first_tmp = mgr.path_for(200) + ".tmp";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    try {
      for (int64_t step = 200;; step += 100) {
        big.step = step;
        save_checkpoint(mgr.path_for(step), big);
      }
    } catch (...) {
    }
    ::_exit(1);
  }
  bool seen = false;
  for (auto t0 = std::chrono::steady_clock::now();
       std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20);) {
    std::error_code ec;
    if (fs::file_size(first_tmp, ec) > (1u << 20) && !ec) {
      seen = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(seen) << "the child never started writing " << first_tmp;
  ASSERT_TRUE(WIFSIGNALED(status));

  const std::vector<std::string> files = mgr.list();
  ASSERT_FALSE(files.empty());
  EXPECT_EQ(files.front(), mgr.path_for(100));
  for (const std::string& f : files) EXPECT_NO_THROW(load_checkpoint(f)) << f;
  EXPECT_EQ(mgr.latest_valid(), files.back());
  if (!fs::exists(mgr.path_for(200))) EXPECT_EQ(files.back(), mgr.path_for(100));
  EXPECT_TRUE(mgr.take_warnings().empty());
  // The next save clears the killed save's temp files.
  mgr.save(10000, make_data(10000));
  for (const auto& entry : fs::directory_iterator(dir_))
    EXPECT_NE(entry.path().extension(), ".tmp") << entry.path();
}

// Deterministic twin of the test above, plus corrupt final files: latest_valid() walks back.
TEST_F(Checkpoint, LatestValidSkipsPartialTruncatedAndCorruptFiles) {
  CheckpointManager mgr(dir_.string(), 0);
  mgr.save(100, make_data(100));
  mgr.save(200, make_data(200));
  const std::string good = read_bytes(mgr.path_for(200));
  write_bytes(mgr.path_for(300) + ".tmp", good.substr(0, good.size() / 3));  // a save killed mid-write
  write_bytes(mgr.path_for(300), good.substr(0, good.size() - 10));          // truncated by a bad copy
  save_checkpoint(mgr.path_for(400), make_data(400));
  std::string flipped = read_bytes(mgr.path_for(400));
  const float pattern[2] = {1000.5f, 1001.5f};
  const size_t at = flipped.find(std::string(reinterpret_cast<const char*>(pattern), sizeof pattern));
  ASSERT_NE(at, std::string::npos);
  flipped[at + 100] ^= 0x40;
  write_bytes(mgr.path_for(400), flipped);

  EXPECT_EQ(mgr.latest_valid(), mgr.path_for(200));
  const std::vector<std::string> warnings = mgr.take_warnings();
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("step_00000400.h5' is corrupt: checksum mismatch"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("step_00000300.h5' is corrupt"), std::string::npos) << warnings[1];
  EXPECT_TRUE(mgr.take_warnings().empty());

  auto r = mgr.resolve_resume("auto");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->path, mgr.path_for(200));
  expect_same_data(make_data(200), r->data);
  EXPECT_EQ(mgr.take_warnings().size(), 2u);
}

TEST_F(Checkpoint, KeepLastPrunesButKeepsTheBest) {
  const std::vector<double> val_loss{5, 3, 1, 4, 6, 7};
  {
    CheckpointManager mgr(path("min"), 2, "val_loss", "min");
    EXPECT_FALSE(mgr.best().has_value());
    for (int64_t i = 0; i < 6; ++i) mgr.save(i + 1, make_data(i + 1, val_loss[size_t(i)]));
    EXPECT_EQ(mgr.list(), (std::vector<std::string>{mgr.path_for(3), mgr.path_for(5), mgr.path_for(6)}));
    EXPECT_EQ(mgr.best(), mgr.path_for(3));
  }
  {
    CheckpointManager mgr(path("max"), 1, "val_loss", "max");
    for (int64_t i = 0; i < 6; ++i) mgr.save(i + 1, make_data(i + 1, val_loss[size_t(i)]));
    EXPECT_EQ(mgr.list(), std::vector<std::string>{mgr.path_for(6)});  // the newest is also the best
  }
  {
    // Ties keep the earlier; checkpoints without the metric (or with NaN) are never the best.
    CheckpointManager mgr(path("ties"), 1, "acc", "max");
    CheckpointData d = make_data(1);
    d.metrics = {{"acc", 0.5}};
    mgr.save(1, d);
    mgr.save(2, d);
    d.metrics = {{"acc", NAN}};
    mgr.save(3, d);
    d.metrics.clear();
    mgr.save(4, d);
    EXPECT_EQ(mgr.list(), (std::vector<std::string>{mgr.path_for(1), mgr.path_for(4)}));
  }
  {
    CheckpointManager mgr(path("all"), 0);
    for (int64_t step : {10, 20, 30}) mgr.save(step, make_data(step));
    EXPECT_EQ(mgr.list().size(), 3u);
    EXPECT_FALSE(mgr.best().has_value());
  }
  {
    // Saving an older step than those on disk (a resume from an earlier checkpoint) keeps it.
    CheckpointManager mgr(path("older"), 1);
    mgr.save(500, make_data(500));
    mgr.save(300, make_data(300));
    EXPECT_EQ(mgr.list(), (std::vector<std::string>{mgr.path_for(300), mgr.path_for(500)}));
  }
}

TEST_F(Checkpoint, ListsOnlyCanonicalNames) {
  CheckpointManager mgr(dir_.string(), 0);
  EXPECT_EQ(mgr.path_for(7), path("step_00000007.h5"));
  EXPECT_EQ(mgr.path_for(123456789), path("step_123456789.h5"));
  mgr.save(7, make_data(7));
  mgr.save(123456789, make_data(8));
  for (const char* other :
       {"step_7.h5", "step_000000007.h5", "step_00000007.h5.bak", "best.h5", "step_0000000x.h5"})
    write_bytes(path(other), "x");
  fs::create_directories(path("step_00000009.h5"));
  EXPECT_EQ(mgr.list(), (std::vector<std::string>{mgr.path_for(7), mgr.path_for(123456789)}));
  expect_error([&] { mgr.path_for(-1); }, "step must be >= 0");
}

TEST_F(Checkpoint, ResolveResumeModesAndErrors) {
  CheckpointManager mgr(path("run/checkpoints"), 3);
  EXPECT_FALSE(fs::exists(path("run")));  // nothing is created before the first save
  EXPECT_FALSE(mgr.resolve_resume("auto").has_value());
  EXPECT_FALSE(mgr.latest_valid().has_value());
  mgr.save(100, make_data(100));
  mgr.save(200, make_data(200));
  EXPECT_FALSE(mgr.resolve_resume("none").has_value());
  EXPECT_FALSE(mgr.resolve_resume("").has_value());
  auto r = mgr.resolve_resume("auto");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->path, mgr.path_for(200));
  EXPECT_EQ(r->data.step, 200);
  r = mgr.resolve_resume(mgr.path_for(100));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->data.step, 100);
  expect_error([&] { mgr.resolve_resume(path("elsewhere.h5")); },
               "train.resume: checkpoint '" + path("elsewhere.h5") + "' does not exist");
  write_bytes(path("bad.h5"), "not a checkpoint at all");
  expect_error([&] { mgr.resolve_resume(path("bad.h5")); },
               "train.resume: checkpoint '" + path("bad.h5") + "' is corrupt");
}

TEST_F(Checkpoint, ManagerRejectsBadSettingsAndUnusableDirectories) {
  expect_error([] { CheckpointManager("", 3); }, "checkpoint directory is empty");
  expect_error([&] { CheckpointManager(dir_.string(), -1); }, "keep_last must be >= 0");
  expect_error([&] { CheckpointManager(dir_.string(), 1, "loss", "median"); },
               "must be 'min' or 'max', got 'median'");
  write_bytes(path("file"), "x");
  CheckpointManager under_file(path("file/checkpoints"), 1);
  expect_error([&] { under_file.save(1, make_data(1)); },
               "cannot create the checkpoint directory '" + path("file/checkpoints"));
  EXPECT_TRUE(under_file.list().empty());
  CheckpointManager in_proc("/proc/moh_ckpt_test", 1);
  expect_error([&] { in_proc.save(1, make_data(1)); },
               "cannot create the checkpoint directory '/proc/moh_ckpt_test'");
}

}  // namespace
}  // namespace moh
