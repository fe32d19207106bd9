// Data-parallel training end to end through `moh train` under `mpirun -np 2`: with the same global
// batch (train.batch_size), 2 processes reproduce 1 process step for step (losses to 1e-6
// relative, same final weights), also with gradient accumulation and for a ViT (dense MHA and MoH
// with global balance statistics), also with the optimizer state sharded (ZeRO-1); a checkpoint of
// either world size (sharded or not) resumes on the other and continues identically; rank 0 alone
// writes the run folder and the eval predictions; `moh eval` on 2 processes (a shard each) gives
// one process's metrics and predictions, `moh sample` one process's bytes; killing a rank ends the job
// non-zero, naming the rank, within the timeout; ranks launched with different configs stop before
// training (exit 2); a stop signal through mpirun (SIGUSR1) or scripts/launch.sh (SIGTERM) ends the job with exit 0.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/io/hdf5_file.h"
#include "core/io/npz.h"
#include "tests/dist/dist_test_util.h"
#include "tests/trainers/llm_run.h"
#include "tests/test_util.h"
#include "trainers/checkpoint.h"

namespace moh::dist::test {
namespace {

namespace fs = std::filesystem;

std::vector<double> losses(const fs::path& run_dir) {
  std::vector<double> out;
  std::ifstream in(run_dir / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record.contains("loss")) out.push_back(record["loss"].get<double>());
  }
  return out;
}

void expect_same_losses(const std::vector<double>& a, const std::vector<double>& b, size_t count) {
  ASSERT_EQ(a.size(), count);
  ASSERT_EQ(b.size(), count);
  for (size_t i = 0; i < count; ++i)
    EXPECT_NEAR(a[i], b[i], 1e-6 * std::abs(a[i])) << "step " << i + 1;
}

void expect_same_weights(const std::string& a_path, const std::string& b_path) {
  const CheckpointData a = load_checkpoint(a_path), b = load_checkpoint(b_path);
  ASSERT_EQ(a.model.size(), b.model.size());
  for (const auto& [name, t] : a.model) {
    ASSERT_TRUE(b.model.count(name)) << name;
    const std::vector<double> x = t.to_vector<double>(), y = b.model.at(name).to_vector<double>();
    ASSERT_EQ(x.size(), y.size()) << name;
    // Summation order differs (one batch vs two halves), so weights agree to float noise: 1e-7 for
    // most, ~1e-5 for the key bias of attention, whose true gradient is 0 and which AdamW moves by
    // its normalised noise. 20 steps move a weight by ~1e-2, so a wrong gradient shows far above 3e-5.
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
    EXPECT_LT(worst, 3e-5) << name;
  }
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.data, b.data);  // the global loader position
}

class DistTrain : public moh::test::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    write("syn.yaml", "task: synthetic\n"
                      "run: {dir: " + (dir_ / "runs").string() + ", seed: 3}\n"
                      "train: {steps: 20, batch_size: 32, log_every: 1, grad_clip: 1.0}\n"
                      "eval: {every: 0}\n"
                      "checkpoint: {every: 10, keep_last: 0}\n"
                      "optim: {name: adamw, lr: 0.01, weight_decay: 0.01}\n"
                      "schedule: {name: cosine, warmup_steps: 5}\n"
                      "data: {train_size: 200, eval_size: 64}\n"
                      "distributed: {bucket_mb: 0.004, timeout_s: 60}\n"
                      "threads: 1\n");
  }
  fs::path run(const std::string& name) const { return dir_ / "runs" / name; }
  std::string checkpoint(const std::string& name, int step) const {
    char file[32];
    std::snprintf(file, sizeof file, "step_%08d.h5", step);
    return (run(name) / "checkpoints" / file).string();
  }
  std::string log_text(const std::string& name) const {
    std::ifstream log(run(name) / "train.log");
    return std::string((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  }
  // Runs resumed from `reference`'s step-10 checkpoint continue it: its last 10 losses and final weights.
  void expect_continue(const std::string& reference, const std::vector<std::string>& resumed) const {
    const std::vector<double> full = losses(run(reference));
    const std::vector<double> tail(full.begin() + 10, full.end());
    for (const std::string& name : resumed) {
      expect_same_losses(losses(run(name)), tail, 10);
      expect_same_weights(checkpoint(reference, 20), checkpoint(name, 20));
    }
  }
  // `moh train CONFIG run.name=NAME ARGS` on np processes (np == 1: no mpirun at all).
  void train(int np, const std::string& config, const std::string& name, const std::string& args = "") const {
    const std::string cli = MOH_TEST_PATH(MOH_CLI_PATH) + " train " + config + " run.name=" + name + " " + args;
    const Outcome r = run_command(np == 1 ? "env OMP_NUM_THREADS=1 " + cli : mpirun(np) + cli);
    ASSERT_EQ(r.status, 0) << r.output;
  }
};

TEST_F(DistTrain, TwoProcessesMatchOneWithTheSameGlobalBatch) {
  MOH_SKIP_UNLESS_MPIRUN();
  const std::string cfg = path("syn.yaml");
  train(1, cfg, "one");
  train(2, cfg, "two");
  expect_same_losses(losses(run("one")), losses(run("two")), 20);
  expect_same_weights(checkpoint("one", 20), checkpoint("two", 20));
  // Rank 0 alone writes: one config, one log, one metrics line per step.
  const std::string text = log_text("two");
  EXPECT_NE(text.find("training 20 steps"), std::string::npos) << text;
  EXPECT_EQ(text.find("training 20 steps"), text.rfind("training 20 steps")) << text;

  // A 2-process checkpoint resumes on 1 process (and the other way) at the same global position.
  train(1, cfg, "two_then_one", "train.resume=" + checkpoint("two", 10));
  train(2, cfg, "one_then_two", "train.resume=" + checkpoint("one", 10));
  expect_continue("two", {"two_then_one", "one_then_two"});
}

// ZeRO-1 checkpoints hold the whole optimizer state, the same as an unsharded run's.
void expect_same_optimizer_state(const std::string& a_path, const std::string& b_path) {
  const CheckpointData a = load_checkpoint(a_path), b = load_checkpoint(b_path);
  ASSERT_EQ(a.optimizer.size(), b.optimizer.size());
  for (const auto& [key, t] : a.optimizer) {
    ASSERT_TRUE(b.optimizer.count(key)) << key;
    ASSERT_EQ(t.shape(), b.optimizer.at(key).shape()) << key;
    const std::vector<double> x = t.to_vector<double>(), y = b.optimizer.at(key).to_vector<double>();
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(x[i], y[i], 1e-4 * std::abs(x[i]) + 1e-7) << key << "[" << i << "]";
  }
}

TEST_F(DistTrain, ShardedOptimizerMatchesOneProcessAndResumesEitherWay) {
  MOH_SKIP_UNLESS_MPIRUN();
  const std::string cfg = path("syn.yaml"), zero = "distributed.shard_optimizer=true ";
  train(1, cfg, "one");
  train(2, cfg, "zero", zero);
  expect_same_losses(losses(run("one")), losses(run("zero")), 20);
  expect_same_weights(checkpoint("one", 20), checkpoint("zero", 20));
  expect_same_optimizer_state(checkpoint("one", 20), checkpoint("zero", 20));
  const std::string text = log_text("zero");
  EXPECT_NE(text.find("optimizer state sharded over 2 ranks (ZeRO-1)"), std::string::npos) << text;

  train(1, cfg, "zero_then_one", "train.resume=" + checkpoint("zero", 10));
  train(2, cfg, "one_then_zero", zero + "train.resume=" + checkpoint("one", 10));
  expect_continue("one", {"zero_then_one", "one_then_zero"});
}

TEST_F(DistTrain, GradientAccumulationCommunicatesOnceAndMatches) {
  MOH_SKIP_UNLESS_MPIRUN();
  const std::string cfg = path("syn.yaml");
  train(1, cfg, "one", "train.steps=8 train.grad_accum=2 checkpoint.every=0");
  train(2, cfg, "two", "train.steps=8 train.grad_accum=2 checkpoint.every=0");
  expect_same_losses(losses(run("one")), losses(run("two")), 8);
  expect_same_weights(checkpoint("one", 8), checkpoint("two", 8));
}

TEST_F(DistTrain, GlobalBatchMustSplitOverRanks) {
  MOH_SKIP_UNLESS_MPIRUN();
  const Outcome r = run_command(mpirun(2) + MOH_TEST_PATH(MOH_CLI_PATH) + " train " + path("syn.yaml") +
                                " run.name=bad train.batch_size=33");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("train.batch_size 33 (the global batch) must be a multiple of train.grad_accum 1 x 2"),
            std::string::npos)
      << r.output;
}

// ViT-tiny on a slice of Fashion-MNIST, without the batch-dependent randomness (drop path, mixup).
TEST_F(DistTrain, VitDenseAndMohMatchOneProcess) {
  MOH_SKIP_UNLESS_MPIRUN();
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "needs Debian's dataset-fashion-mnist";
  const std::string configs = MOH_TEST_PATH(MOH_SOURCE_DIR) + "/configs/vit/";
  const std::string common =
      "run.dir=" + (dir_ / "runs").string() +
      " train.steps=20 train.batch_size=16 train.log_every=1 checkpoint.every=0 eval.every=0 data.eval_limit=32 "
      "data.train_limit=320 model.dim=32 model.depth=2 model.heads=4 model.drop_path=0 schedule.warmup_steps=2 "
      "threads=1 distributed.timeout_s=60 distributed.bucket_mb=0.02 ";
  const std::string moh = common + "model.shared_heads=[1] model.routed_topk=[2] moh.balance_scope=global";
  train(1, configs + "fmnist_mha.yaml", "mha_one", common);
  // Each rank evaluates its half of the held-out set at the end; rank 0 writes all the predictions.
  const std::string predictions = path("predictions.h5");
  train(2, configs + "fmnist_mha.yaml", "mha_two", common + " eval.every=20 eval.predictions=" + predictions);
  expect_same_losses(losses(run("mha_one")), losses(run("mha_two")), 20);
  expect_same_weights(checkpoint("mha_one", 20), checkpoint("mha_two", 20));
  EXPECT_FALSE(fs::exists(predictions + ".tmp"));
  EXPECT_EQ(Hdf5File(predictions, Hdf5File::Mode::Read).read_tensor("logits").shape(), (Shape{32, 10}));
  train(1, configs + "fmnist_moh.yaml", "moh_one", moh);
  train(2, configs + "fmnist_moh.yaml", "moh_two", moh);
  expect_same_losses(losses(run("moh_one")), losses(run("moh_two")), 20);
  expect_same_weights(checkpoint("moh_one", 20), checkpoint("moh_two", 20));
}

// The eval metrics of a run's metrics.jsonl ("eval/<name>" of its last eval record).
std::map<std::string, double> last_eval(const fs::path& run_dir) {
  std::map<std::string, double> out;
  std::ifstream in(run_dir / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    for (const auto& [key, value] : record.items())
      if (key.starts_with("eval/")) out[key] = value.get<double>();
  }
  return out;
}

// The llm task (a LLaMA-style model on a generated character corpus): 2 ranks train as 1 process, MHA
// and MoH with global balance statistics, and evaluate their halves of the validation windows to the
// same loss and bits per byte.
TEST_F(DistTrain, LlmDenseAndMohMatchOneProcess) {
  MOH_SKIP_UNLESS_MPIRUN();
  moh::test::llm_config(dir_, "llm", {});  // writes the corpus and llm.yaml
  const std::string cfg = path("llm.yaml");
  const std::string common = "train.steps=12 train.batch_size=8 train.log_every=1 eval.every=12 threads=1 "
                             "distributed.timeout_s=60 distributed.bucket_mb=0.01 ";
  const std::string moh = common + "model.attention=moh model.shared_heads=[1] model.routed_topk=[2] "
                                   "model.kv_heads=2 moh.balance_scope=global";
  for (const auto& [name, overrides] : {std::pair{"mha", common}, std::pair{"moh", moh}}) {
    train(1, cfg, std::string(name) + "_one", overrides);
    train(2, cfg, std::string(name) + "_two", overrides);
    expect_same_losses(losses(run(std::string(name) + "_one")), losses(run(std::string(name) + "_two")), 12);
    expect_same_weights(checkpoint(std::string(name) + "_one", 12), checkpoint(std::string(name) + "_two", 12));
    const auto one = last_eval(run(std::string(name) + "_one")), two = last_eval(run(std::string(name) + "_two"));
    ASSERT_TRUE(one.count("eval/bits_per_byte")) << name;
    EXPECT_EQ(one.at("eval/tokens"), two.at("eval/tokens")) << name;
    for (const char* key : {"eval/loss", "eval/bits_per_byte"})
      EXPECT_NEAR(one.at(key), two.at(key), 1e-5 * one.at(key)) << name << " " << key;
  }
}

double json_number(const std::string& output, const std::string& key) {
  const auto result = nlohmann::json::parse(output.substr(output.rfind('{')));  // the last line's object
  return result.at(key).get<double>();
}

// `moh eval` of one checkpoint under mpirun: each rank evaluates its shard (37 samples: 19 + 18, in
// batches of 8), and the reduced metrics and the gathered predictions equal one process's; for a
// ViT with MoH and for the synthetic task.
TEST_F(DistTrain, ShardedEvalMatchesOneProcess) {
  MOH_SKIP_UNLESS_MPIRUN();
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "needs Debian's dataset-fashion-mnist";
  train(1, MOH_TEST_PATH(MOH_SOURCE_DIR) + "/configs/vit/fmnist_moh.yaml", "moh",
        "run.dir=" + (dir_ / "runs").string() +
            " train.steps=3 train.batch_size=16 schedule.warmup_steps=1 checkpoint.every=0 eval.every=0 "
            "data.eval_limit=8 "
            "data.train_limit=64 model.dim=32 model.depth=2 model.heads=4 model.shared_heads=[1] "
            "model.routed_topk=[2] threads=1");
  const std::string cli = MOH_TEST_PATH(MOH_CLI_PATH) + " eval " + checkpoint("moh", 3) +
                          " data.eval_limit=37 eval.batch_size=8 threads=1 eval.predictions=";
  const Outcome one = run_command("env OMP_NUM_THREADS=1 " + cli + path("one.h5"));
  ASSERT_EQ(one.status, 0) << one.output;
  const Outcome two = run_command(mpirun(2) + cli + path("two.h5"));
  ASSERT_EQ(two.status, 0) << two.output;
  EXPECT_EQ(two.output.find('{'), two.output.rfind('{')) << "rank 0 alone prints: " << two.output;
  EXPECT_EQ(json_number(two.output, "samples"), 37);
  EXPECT_NEAR(json_number(two.output, "loss"), json_number(one.output, "loss"), 1e-6 * json_number(one.output, "loss"));
  for (const char* metric : {"top1", "top5"})
    EXPECT_EQ(json_number(two.output, metric), json_number(one.output, metric)) << metric;
  Hdf5File a(path("one.h5"), Hdf5File::Mode::Read), b(path("two.h5"), Hdf5File::Mode::Read);
  EXPECT_EQ(a.read_tensor("labels").to_vector<int64_t>(), b.read_tensor("labels").to_vector<int64_t>());
  const std::vector<double> x = a.read_tensor("logits").to_vector<double>(), y = b.read_tensor("logits").to_vector<double>();
  ASSERT_EQ(x.size(), 37u * 10u);
  ASSERT_EQ(y.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], y[i], 1e-5 * (1 + std::abs(x[i]))) << "logit " << i;

  // The synthetic task shards the same way.
  train(1, path("syn.yaml"), "syn", "train.steps=6 checkpoint.every=0");
  const std::string syn = MOH_TEST_PATH(MOH_CLI_PATH) + " eval " + checkpoint("syn", 6) +
                          " data.eval_size=37 eval.batch_size=8 threads=1";
  const Outcome syn_one = run_command("env OMP_NUM_THREADS=1 " + syn), syn_two = run_command(mpirun(2) + syn);
  ASSERT_EQ(syn_one.status, 0) << syn_one.output;
  ASSERT_EQ(syn_two.status, 0) << syn_two.output;
  EXPECT_NEAR(json_number(syn_two.output, "loss"), json_number(syn_one.output, "loss"),
              1e-6 * json_number(syn_one.output, "loss"));
  EXPECT_EQ(json_number(syn_two.output, "top1"), json_number(syn_one.output, "top1"));
}

// Ranks launched with different configs (an MPMD launch with other overrides per rank) stop
// together before training, exit 2, rank 0 naming the first differing key with both values;
// `threads` may differ. (Different step counts used to corrupt memory through collectives that
// did not match; a different learning rate trained diverging replicas and exited 0.)
TEST_F(DistTrain, RanksWithDifferentConfigsStopNamingTheFirstDifference) {
  MOH_SKIP_UNLESS_MPIRUN();
  const std::string cli = MOH_TEST_PATH(MOH_CLI_PATH) + " train " + path("syn.yaml") +
                          " run.name=mixed train.log_every=10 distributed.timeout_s=10 ";
  const Outcome steps = run_command(mpirun(1) + cli + "train.steps=5 : -np 1 " + cli + "train.steps=7");
  EXPECT_EQ(steps.status, 2) << steps.output;
  EXPECT_NE(steps.output.find("the ranks do not run the same job: train.steps is 5 on rank 0 but 7 on rank 1; "
                              "rank 1 differs from rank 0"),
            std::string::npos)
      << steps.output;
  const Outcome lr = run_command(mpirun(1) + cli + "threads=1 : -np 1 " + cli + "threads=2 optim.lr=0.02");
  EXPECT_EQ(lr.status, 2) << lr.output;
  EXPECT_NE(lr.output.find("optim.lr is 0.01 on rank 0 but 0.02 on rank 1; rank 1 differs"), std::string::npos)
      << lr.output;
  EXPECT_FALSE(fs::exists(run("mixed") / "checkpoints") && !fs::is_empty(run("mixed") / "checkpoints"));
}

// A job started in the background with its output in `out` (the shell execs the command, so the
// pid is the command's own), and its exit status within `seconds` (-1: killed by a signal; the
// test fails and the job is killed when it takes longer).
pid_t start_job(const std::string& command, const fs::path& out) {
  const pid_t job = fork();
  if (job == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + command + " > " + out.string() + " 2>&1").c_str(), nullptr);
    _exit(127);
  }
  return job;
}

int finish_job(pid_t job, int seconds) {
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  while (waitpid(job, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(seconds)) {
      kill(job, SIGKILL);
      waitpid(job, &status, 0);
      ADD_FAILURE() << "the job ran longer than " << seconds << " s";
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string file_text(const fs::path& file) {
  std::ifstream in(file);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// `moh sample` under mpirun: the ranks split the batches (each batch its own noise stream) and rank 0
// writes the gathered samples, byte for byte one process's, also when a rank gets no batch at all.
TEST_F(DistTrain, ShardedSampleWritesOneProcesssBytes) {
  MOH_SKIP_UNLESS_MPIRUN();
  if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "needs Debian's dataset-fashion-mnist";
  const std::string runs = (dir_ / "runs").string(), latents = path("lat.h5");
  write("ae.yaml", "task: autoencoder\nrun: {dir: " + runs +
                       "}\ntrain: {steps: 6, batch_size: 8}\neval: {every: 0, grid_images: 0}\n"
                       "data: {train_limit: 64, eval_limit: 8}\nmodel: {base_channels: 8, norm_groups: 4}\n"
                       "threads: 1\n");
  write("dit.yaml", "task: dit\nrun: {dir: " + runs +
                        "}\ntrain: {steps: 4, batch_size: 8}\neval: {every: 0}\ndiffusion: {steps: 50}\n"
                        "model: {dim: 32, depth: 1, heads: 2}\ndata: {latents: " + latents + ", autoencoder: " +
                        run("ae").string() + "}\nthreads: 1\n");
  train(1, path("ae.yaml"), "ae");
  const Outcome encoded = run_command("env OMP_NUM_THREADS=1 " + MOH_TEST_PATH(MOH_CLI_PATH) + " encode " +
                                      run("ae").string() + " --out " + latents + " --limit 64");
  ASSERT_EQ(encoded.status, 0) << encoded.output;
  train(1, path("dit.yaml"), "dit");
  const std::string cli = MOH_TEST_PATH(MOH_CLI_PATH) + " sample " + run("dit").string() +
                          " --steps 3 --cfg 2 --sampler ddpm --seed 4 threads=1 --out ";
  for (const std::string& shape : {std::string("--num 7 --batch 2"), std::string("--num 3 --batch 4")}) {
    SCOPED_TRACE(shape);  // 4 batches: 2 per rank (the last one short); 1 batch: rank 1 samples nothing
    const Outcome one = run_command("env OMP_NUM_THREADS=1 " + cli + path("one") + " " + shape);
    ASSERT_EQ(one.status, 0) << one.output;
    const Outcome two = run_command(mpirun(2) + cli + path("two") + " " + shape);
    ASSERT_EQ(two.status, 0) << two.output;
    EXPECT_EQ(two.output.find("\"samples\""), two.output.rfind("\"samples\"")) << "rank 0 alone reports: "
                                                                                << two.output;
    EXPECT_NE(two.output.find("\"processes\":2"), std::string::npos) << two.output;
    const auto a = load_npz(path("one/samples.npz")), b = load_npz(path("two/samples.npz"));
    EXPECT_EQ(a.at("arr_0").shape(), b.at("arr_0").shape());
    EXPECT_EQ(a.at("arr_0").to_vector<uint8_t>(), b.at("arr_0").to_vector<uint8_t>());
    EXPECT_EQ(a.at("arr_1").to_vector<int64_t>(), b.at("arr_1").to_vector<int64_t>());
    fs::remove_all(path("one")), fs::remove_all(path("two"));
  }
}

// A graceful stop of a whole job: mpirun ends a job on its own SIGTERM (exit 1, ranks SIGKILLed a
// second later) but forwards SIGUSR1, a stop request to every rank; scripts/launch.sh turns its
// SIGTERM into that. Either way every rank stops at the same step, rank 0 saves a checkpoint and
// the job exits 0.
TEST_F(DistTrain, StopSignalToTheLauncherStopsEveryRankAndExitsZero) {
  MOH_SKIP_UNLESS_MPIRUN();
  const std::string mpirun_path = MOH_TEST_PATH(MOH_MPIRUN);
  const std::string args = " " + path("syn.yaml") + " train.steps=1000000 checkpoint.every=0 ";
  const std::string launch = "env PATH=" + mpirun_path.substr(0, mpirun_path.find_last_of('/')) +
                             ":$PATH MOH_BIN=" + MOH_TEST_PATH(MOH_CLI_PATH) + " MPIRUN_ARGS=--oversubscribe " +
                             MOH_TEST_PATH(MOH_SOURCE_DIR) + "/scripts/launch.sh -n 2 -t 1";
  struct Launcher {
    std::string name, command;
    int signal;
  };
  for (const Launcher& l : {Launcher{"usr1", mpirun(2) + MOH_TEST_PATH(MOH_CLI_PATH) + " train" + args + "run.name=usr1",
                                     SIGUSR1},
                            Launcher{"term", launch + args + "run.name=term", SIGTERM}}) {
    const std::string& name = l.name;
    const fs::path out = dir_ / (name + ".out");
    const pid_t job = start_job(l.command, out);
    ASSERT_GT(job, 0);
    for (int i = 0; i < 600 && losses(run(name)).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_FALSE(losses(run(name)).empty()) << "training did not start: " << file_text(out);
    kill(job, l.signal);
    EXPECT_EQ(finish_job(job, 60), 0) << name << ":\n" << file_text(out);
    const std::string text = file_text(out);
    EXPECT_NE(text.find("stop requested at step"), std::string::npos) << text;
    EXPECT_NE(text.find("\"interrupted\":true"), std::string::npos) << text;
  }
}

// Rank 1 of a running `moh train` is killed: the job ends non-zero, naming rank 1, in time.
TEST_F(DistTrain, KillingARankEndsTheRunNamingIt) {
  MOH_SKIP_UNLESS_MPIRUN();
  const fs::path out = dir_ / "job.out";
  const std::string cli = MOH_TEST_PATH(MOH_CLI_PATH) + " train " + path("syn.yaml") +
                          " run.name=killed train.steps=1000000 checkpoint.every=0 distributed.timeout_s=20";
  const pid_t job = start_job(mpirun(2) + cli, out);
  ASSERT_GE(job, 0);
  // Rank 1 is the moh process whose environment says so and whose command line names this run.
  auto find_rank1 = [&]() -> pid_t {
    for (const auto& entry : fs::directory_iterator("/proc")) {
      const std::string pid = entry.path().filename();
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream cmd(entry.path() / "cmdline"), env(entry.path() / "environ");
      const std::string c((std::istreambuf_iterator<char>(cmd)), {}), e((std::istreambuf_iterator<char>(env)), {});
      if (c.find("run.name=killed") != std::string::npos && c.find(MOH_TEST_PATH(MOH_CLI_PATH)) == 0 &&
          e.find(std::string("OMPI_COMM_WORLD_RANK=1") + '\0') != std::string::npos)
        return pid_t(std::stol(pid));
    }
    return -1;
  };
  pid_t victim = -1;
  const auto started = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - started < std::chrono::seconds(30)) {
    victim = find_rank1();
    if (victim > 0 && !losses(run("killed")).empty()) break;  // training is under way
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GT(victim, 0) << "rank 1 never started";
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  EXPECT_NE(finish_job(job, 40), 0) << "the job must end non-zero, well within 40 s (the timeout is 20 s)";
  const std::string text = file_text(out);
  EXPECT_NE(text.find("rank 1"), std::string::npos) << text;
}

}  // namespace
}  // namespace moh::dist::test
