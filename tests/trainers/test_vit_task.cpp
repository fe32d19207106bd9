// The `vit` task on real Fashion-MNIST files: a short run learns, an MoH run with label smoothing and
// Mixup/CutMix resumes bit for bit, evaluation reports top-1/top-5/loss/active heads and writes the
// predictions file, and configs the model cannot honour are rejected naming the key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "core/io/hdf5_file.h"
#include "core/ops.h"
#include "data/image_decode.h"
#include "data/fashion_mnist.h"
#include "tests/data/image_test_util.h"
#include "tests/test_util.h"
#include "tests/trainers/fashion_mnist_run.h"
#include "tests/trainers/resume_run.h"
#include "trainers/checkpoint.h"
#include "trainers/trainer.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

class VitTask : public test::FashionMnistRunTest {
 protected:
  // A small ViT on a Fashion-MNIST subset; `name` picks the run folder.
  Config config(const std::string& name, const std::vector<std::string>& overrides) const {
    return task_config("vit", name,
                       "train: {steps: 80, batch_size: 32, log_every: 10}\n"
                       "eval: {every: 0, batch_size: 128}\n"
                       "checkpoint: {every: 0}\n"
                       "optim: {lr: 0.003, weight_decay: 0.05}\n"
                       "schedule: {name: cosine, warmup_steps: 5}\n"
                       "data: {train_limit: 1024, eval_limit: 300, crop_padding: 0, hflip: 0}\n"
                       "model: {patch_size: 7, dim: 32, depth: 2, heads: 4, pool: avg}\n"
                       "threads: 2\n",
                       overrides);
  }
};

TEST_F(VitTask, ShortRunLearnsFashionMnist) {
  Config cfg = config("learn", {});
  auto task = task_family("vit").create(cfg);
  const auto before = task->evaluate();
  EXPECT_NEAR(before.at("top1"), 0.1, 0.08);  // untrained: about chance
  const TrainResult r = Trainer(cfg, *task).run();
  EXPECT_GT(r.eval.at("top1"), 0.45) << "loss before " << before.at("loss") << " after " << r.eval.at("loss");
  EXPECT_LT(r.eval.at("loss"), before.at("loss") - 0.4);
  EXPECT_GE(r.eval.at("top5"), r.eval.at("top1"));
  EXPECT_EQ(r.eval.at("samples"), 300);
  EXPECT_EQ(r.eval.at("active_heads"), 1.0);
}

TEST_F(VitTask, MohWithMixingResumesBitForBit) {
  const std::vector<std::string> common{"model.attention=moh", "model.shared_heads=[1]", "model.routed_topk=[2]",
                                        "data.label_smoothing=0.1", "data.mixup=0.8", "data.cutmix=1.0",
                                        "data.crop_padding=2", "data.hflip=0.5", "model.drop_path=0.1",
                                        "schedule.name=constant", "schedule.warmup_steps=0", "train.steps=8"};
  const TrainResult done = test::expect_resume_matches_whole_run(
      "vit", [&](const std::string& name, const std::vector<std::string>& o) { return config(name, o); }, common, 4);
  EXPECT_EQ(done.step, 8);
  EXPECT_EQ(done.eval.at("active_heads"), 0.75);
}

TEST_F(VitTask, EvaluationWritesPredictionsThatMatchItsAccuracy) {
  Config cfg = config("pred", {"eval.predictions=" + path("pred.h5"), "data.eval_limit=250"});
  auto task = task_family("vit").create(cfg);
  const auto metrics = task->evaluate();
  Hdf5File f(path("pred.h5"), Hdf5File::Mode::Read);
  const Tensor logits = f.read_tensor("logits"), labels = f.read_tensor("labels");
  ASSERT_EQ(logits.shape(), (Shape{250, 10}));
  ASSERT_EQ(labels.shape(), (Shape{250}));
  const auto pred = argmax(logits, 1).to_vector<int64_t>(), truth = labels.to_vector<int64_t>();
  int64_t correct = 0;
  for (size_t i = 0; i < pred.size(); ++i) correct += pred[i] == truth[i];
  EXPECT_DOUBLE_EQ(metrics.at("top1"), double(correct) / 250.0);
  EXPECT_NEAR(metrics.at("loss"), cross_entropy(logits, labels).loss.item<double>(), 1e-5);
  EXPECT_NE(f.attr_string("/", "class_names").find("Ankle boot"), std::string::npos);
  EXPECT_FALSE(fs::exists(path("pred.h5.tmp")));
}

// An image folder of `per_class` PNG files in each of 2 classes told apart by brightness, under
// root/{train,val}, and a config training a tiny ViT from it (24 steps of 4) into root/runs/folder.
fs::path write_brightness_folder(const fs::path& root, int per_class) {
  fs::remove_all(root);
  for (const char* split : {"train", "val"})
    for (int c = 0; c < 2; ++c) {
      fs::create_directories(root / split / ("class" + std::to_string(c)));
      for (int i = 0; i < per_class; ++i)
        write_file_bytes((root / split / ("class" + std::to_string(c)) / (std::to_string(i) + ".png")).string(),
                         encode_png(test::make_image(20 + i, 18, 3, [&](int64_t y, int64_t x, int64_t k) {
                           return uint8_t(c == 0 ? 30 + (x + y + k) % 20 : 200 + (x * y + k) % 40);
                         })));
    }
  const fs::path cfg_file = root / "cfg.yaml";
  std::ofstream(cfg_file) << "task: vit\n"
                             "run: {name: folder, dir: " << (root / "runs").string() << "}\n"
                             "train: {steps: 24, batch_size: 4, log_every: 4}\n"
                             "eval: {every: 0, batch_size: 5}\n"
                             "checkpoint: {every: 12}\n"
                             "optim: {lr: 0.003}\n"
                             "data: {name: image_folder, root: " << root.string() << ", image_size: 16, workers: 2}\n"
                             "model: {patch_size: 8, dim: 16, depth: 1, heads: 2}\n";
  return cfg_file;
}

// Training runs through the threaded loader, evaluation reads val/, and the position resumes.
TEST(VitTaskImageFolder, TrainsAndEvaluatesFromAFolderOfImages) {
  const fs::path root = fs::temp_directory_path() / ("moh_vit_folder_" + std::to_string(::getpid()));
  const fs::path cfg_file = write_brightness_folder(root, 6);
  Config cfg = Config::load(cfg_file.string(), training_schema("vit"), {});
  auto task = task_family("vit").create(cfg);
  EXPECT_EQ(task->samples_per_epoch(), 12);
  const TrainResult r = Trainer(cfg, *task).run();
  EXPECT_EQ(r.eval.at("samples"), 12);
  EXPECT_EQ(r.eval.count("top5"), 0u);  // 2 classes: top-2 is the widest
  EXPECT_GT(r.eval.at("top1"), 0.7);    // brightness separates the classes
  // 24 steps x 4 samples = 8 whole epochs of 12 images: the position is the end of epoch 7.
  EXPECT_EQ(task->data_state().at("epoch"), 7);
  EXPECT_EQ(task->data_state().at("index"), 12);

  Config resume_cfg = Config::load(cfg_file.string(), training_schema("vit"),
                                   {"train.resume=" + (root / "runs/folder/checkpoints/step_00000012.h5").string(),
                                    "run.name=resumed"});
  auto resumed = task_family("vit").create(resume_cfg);
  Trainer(resume_cfg, *resumed).run();
  StateDict a = task->model().state_dict(), b = resumed->model().state_dict();
  for (auto& [name, t] : a) test::expect_same_bytes(b.at(name), t, name);
  fs::remove_all(root);
}

// An unreadable image is skipped with a warning that reaches the run's train.log, not only stderr.
TEST(VitTaskImageFolder, SkippedImagesAreReportedInTrainLog) {
  const fs::path root = fs::temp_directory_path() / ("moh_vit_skip_" + std::to_string(::getpid()));
  const fs::path cfg_file = write_brightness_folder(root, 3);
  write_file_bytes((root / "train" / "class0" / "broken.png").string(), {'n', 'o', 't', ' ', 'p', 'n', 'g'});
  Config cfg = Config::load(cfg_file.string(), training_schema("vit"), {"train.steps=4"});
  auto task = task_family("vit").create(cfg);
  Trainer(cfg, *task).run();
  std::ifstream in(root / "runs" / "folder" / "train.log");
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(log.find("warning image_folder: skipping unreadable image"), std::string::npos) << log;
  EXPECT_NE(log.find("broken.png"), std::string::npos) << log;
  fs::remove_all(root);
}

TEST_F(VitTask, RejectsModelsTheConfigCannotBuild) {
  auto create = [&](const std::vector<std::string>& overrides) {
    Config cfg = config("bad", overrides);
    task_family("vit").create(cfg);
  };
  test::expect_error<ConfigError>([&] { create({"model.attention=moh"}); }, {"model.shared_heads"});
  test::expect_error<ConfigError>([&] { create({"model.shared_heads=[1]", "model.routed_topk=[2]"}); },
                                  {"model.attention is mha"});
  test::expect_error<ConfigError>([&] { create({"model.heads=5"}); }, {"model.heads 5", "model.dim 32"});
  test::expect_error<ConfigError>([&] { create({"model.patch_size=5"}); }, {"model.patch_size 5", "28"});
  const std::vector<std::string> moh = {"model.attention=moh", "model.heads=4", "model.depth=2"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), moh.begin(), moh.end());
    return extra;
  };
  test::expect_error<ConfigError>([&] { create(with({"model.shared_heads=[5]", "model.routed_topk=[0]"})); },
                                  {"model.shared_heads 5 (block 0) exceeds model.heads 4"});
  test::expect_error<ConfigError>([&] { create(with({"model.shared_heads=[1]", "model.routed_topk=[1, 4]"})); },
                                  {"model.routed_topk 4 (block 1) exceeds the 3 routed heads"});
  test::expect_error<ConfigError>([&] { create(with({"model.shared_heads=[1, 1, 1]", "model.routed_topk=[1]"})); },
                                  {"model.shared_heads has 3 values", "one per block (2)"});
  test::expect_error([&] { create({"data.root=" + path("nowhere")}); }, {"nowhere"});
}

}  // namespace
}  // namespace moh
