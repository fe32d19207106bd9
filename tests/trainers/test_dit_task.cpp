// The `dit` task on a synthetic latent file (class-dependent patterns plus noise, written with
// LatentFileWriter): the untrained model's held-out MSE is the noise's variance (its output is zero), a
// short run lowers it, an MoH run with class dropout resumes bit for bit, the evaluation does not depend on
// its batch size (per-sample draws), and the keys the latents contradict are rejected naming the key.
#include <gtest/gtest.h>

#include <cmath>

#include "core/factory.h"
#include "core/ops.h"
#include "data/latent_file.h"
#include "tests/test_util.h"
#include "tests/trainers/resume_run.h"
#include "trainers/dit_task.h"
#include "trainers/trainer.h"

namespace moh {
namespace {

class DitTaskTest : public test::TempDirTest {
 protected:
  // n latents [4, side, side] of `classes` classes: latent i is pattern (i % classes) + 0.1 noise, stored
  // divided by 2 with scale factor 2 (so the model sees the patterns at unit scale).
  std::string write_latents(const std::string& name, int64_t n, int64_t side = 8, int64_t classes = 4) const {
    const std::string file = path(name);
    const Tensor patterns = test::rand_t({classes, 4, side, side}, 3);
    const Tensor noise = test::rand_t({n, 4, side, side}, 11);
    std::vector<int64_t> labels(static_cast<size_t>(n));
    std::vector<Tensor> rows;
    for (int64_t i = 0; i < n; ++i) {
      labels[size_t(i)] = i % classes;
      rows.push_back(patterns.narrow(0, i % classes, 1));
    }
    const Tensor latents = mul(add(cat(rows, 0), mul(noise, 0.1)), 0.5).contiguous();
    LatentFileWriter w(file, {n, {4, side, side}, classes, "mean", 2.0});
    w.write(latents, from_vector<int64_t>(labels, {n}));
    w.finish();
    return file;
  }

  Config config(const std::string& name, const std::vector<std::string>& overrides) {
    if (train_.empty()) train_ = write_latents("train.h5", 96), eval_ = write_latents("eval.h5", 40);
    const std::string file =
        write(name + ".yaml", "task: dit\nrun: {name: " + name + ", dir: " + path("runs") +
                                  ", seed: 1}\n"
                                  "train: {steps: 30, batch_size: 16, log_every: 10}\n"
                                  "eval: {every: 0, batch_size: 16}\n"
                                  "checkpoint: {every: 0}\n"
                                  "optim: {lr: 0.002, weight_decay: 0}\n"
                                  "schedule: {name: constant, warmup_steps: 0}\n"
                                  "diffusion: {steps: 100}\n"
                                  "model: {dim: 32, depth: 2, heads: 4}\n"
                                  "data: {latents: " +
                                  train_ + ", eval_latents: " + eval_ + "}\nthreads: 1\n");
    return Config::load(file, training_schema("dit"), overrides);
  }
  std::unique_ptr<Task> create(const std::vector<std::string>& overrides) {
    return task_family("dit").create(config("check", overrides));
  }

  std::string train_, eval_;
};

TEST_F(DitTaskTest, UntrainedMseIsTheNoiseVarianceAndTrainingLowersIt) {
  Config cfg = config("learn", {});
  auto task = task_family("dit").create(cfg);
  const auto before = task->evaluate();
  // adaLN-Zero: the untrained model predicts eps = 0, so the MSE is the mean square of standard normal noise.
  EXPECT_NEAR(before.at("mse"), 1.0, 0.1);
  EXPECT_EQ(before.at("samples"), 40);
  EXPECT_NEAR(before.at("loss"), before.at("mse") + before.at("vb"), 1e-5);
  const TrainResult r = Trainer(cfg, *task).run();
  EXPECT_LT(r.eval.at("mse"), 0.85 * before.at("mse"));
  EXPECT_LT(r.eval.at("loss"), before.at("loss"));
  EXPECT_EQ(r.eval.at("active_heads"), 1.0);
}

TEST_F(DitTaskTest, MohWithClassDropoutResumesBitForBit) {
  const std::vector<std::string> common{"model.attention=moh", "model.shared_heads=[2]", "model.routed_topk=[1]",
                                        "model.class_dropout=0.3", "train.steps=6", "data.eval_limit=8"};
  const TrainResult done = test::expect_resume_matches_whole_run(
      "dit", [&](const std::string& name, const std::vector<std::string>& o) { return config(name, o); }, common,
      3);
  EXPECT_EQ(done.step, 6);
  EXPECT_EQ(done.eval.at("active_heads"), 0.75);
}

TEST_F(DitTaskTest, EvaluationDoesNotDependOnItsBatchSize) {
  const auto a = create({"eval.batch_size=7"})->evaluate();
  const auto b = create({"eval.batch_size=64"})->evaluate();
  for (const char* key : {"loss", "mse", "vb"}) EXPECT_NEAR(a.at(key), b.at(key), 1e-6 * std::abs(b.at(key))) << key;
  // Without data.eval_latents the training latents are evaluated; data.eval_limit keeps the first N.
  const auto limited = create({"data.eval_limit=5"})->evaluate();
  EXPECT_EQ(limited.at("samples"), 5);
}

TEST_F(DitTaskTest, PerBlockHeadCountsComeFromTheConfig) {
  // MoH-DiT-L/XL's layout at this size: 2 then 6 heads of width 8 (model.dim 32), routing in block 1 only.
  const auto task = create({"model.block_heads=[2, 6]", "model.head_dim=8", "model.attention=moh",
                            "model.shared_heads=[2, 4]", "model.routed_topk=[0, 1]"});
  // (2 + 5) of (2 + 6) heads' query rows.
  EXPECT_DOUBLE_EQ(task->evaluate().at("active_heads"), 7.0 / 8);
  test::expect_error<ConfigError>([&] { create({"model.block_heads=[2, 4, 8]"}); },
                                  {"model.block_heads has 3 values", "(2)"});
  test::expect_error<ConfigError>(
      [&] { create({"model.block_heads=[2, 4]", "model.attention=moh", "model.shared_heads=[3]",
                    "model.routed_topk=[0]"}); },
      {"model.shared_heads", "model.shared_heads 3 (block 0) exceeds model.block_heads 2"});
  test::expect_error<ConfigError>([&] { create({"model.heads=3", "model.head_dim=8", "model.block_heads=[3, 0]"}); },
                                  {"model.block_heads"});
}

TEST_F(DitTaskTest, RejectsKeysTheLatentsContradict) {
  test::expect_error<ConfigError>([&] { create({"model.patch_size=3"}); },
                                  {"model.patch_size 3", "latent side 8"});
  test::expect_error<ConfigError>([&] { create({"model.heads=3"}); }, {"model.heads", "model.dim 32"});
  const std::string odd = write_latents("odd.h5", 8, 4);
  test::expect_error<ConfigError>([&] { create({"data.eval_latents=" + odd}); },
                                  {"data.eval_latents", odd, "of 4 classes"});
  test::expect_error<ConfigError>([&] { create({"data.latents=" + path("missing.h5")}); },
                                  {"data.latents", "missing.h5"});
  test::expect_error<ConfigError>([&] { create({"model.attention=moh"}); }, {"moh needs model.shared_heads"});
}

}  // namespace
}  // namespace moh
