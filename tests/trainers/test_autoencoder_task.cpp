// The `autoencoder` task on real Fashion-MNIST files: a short run learns to reconstruct (PSNR up), a run
// with flips and posterior sampling resumes bit for bit, evaluation writes the reconstruction grid whose
// original tiles are the dataset's own bytes, data.eval_split=train evaluates the training images in
// order, and configs the model or the padding cannot honour are rejected naming the key.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "data/fashion_mnist.h"
#include "data/image_decode.h"
#include "tests/test_util.h"
#include "tests/trainers/fashion_mnist_run.h"
#include "tests/trainers/resume_run.h"
#include "trainers/autoencoder_task.h"
#include "trainers/trainer.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

class AutoencoderTask : public test::FashionMnistRunTest {
 protected:
  // A narrow autoencoder (ch 8) on a Fashion-MNIST subset; `name` picks the run folder.
  Config config(const std::string& name, const std::vector<std::string>& overrides) const {
    return task_config("autoencoder", name,
                       "train: {steps: 30, batch_size: 16, log_every: 10}\n"
                       "eval: {every: 0, batch_size: 64, grid_images: 0}\n"
                       "checkpoint: {every: 0}\n"
                       "optim: {lr: 0.003, weight_decay: 0}\n"
                       "schedule: {name: cosine, warmup_steps: 4}\n"
                       "data: {train_limit: 512, eval_limit: 32}\n"
                       "model: {base_channels: 8, norm_groups: 4}\n"
                       "threads: 1\n",
                       overrides);
  }
  std::unique_ptr<Task> create(const std::vector<std::string>& overrides) const {
    return task_family("autoencoder").create(config("check", overrides));
  }
};

TEST_F(AutoencoderTask, ShortRunLearnsToReconstruct) {
  Config cfg = config("learn", {});
  auto task = task_family("autoencoder").create(cfg);
  const auto before = task->evaluate();
  const TrainResult r = Trainer(cfg, *task).run();
  const auto& after = r.eval;
  EXPECT_GT(after.at("psnr"), before.at("psnr") + 3.0) << "before " << before.at("psnr");
  EXPECT_LT(after.at("reconstruction"), 0.6 * before.at("reconstruction"));
  EXPECT_LT(after.at("loss"), before.at("loss"));
  EXPECT_GT(after.at("kl"), 0.0);
  EXPECT_EQ(after.at("samples"), 32);
  // The mean of per-image PSNRs is at least the PSNR of the mean MSE (-log is convex).
  EXPECT_GE(after.at("psnr") + 1e-9, 10.0 * std::log10(1.0 / after.at("mse")));
}

TEST_F(AutoencoderTask, SamplingAndFlipsResumeBitForBit) {
  const std::vector<std::string> common{"data.hflip=0.5", "data.crop_padding=1", "model.reconstruction_loss=l2",
                                        "model.kl_weight=0.001", "schedule.name=constant", "schedule.warmup_steps=0",
                                        "train.steps=6", "data.eval_limit=8"};
  const TrainResult done = test::expect_resume_matches_whole_run(
      "autoencoder", [&](const std::string& name, const std::vector<std::string>& o) { return config(name, o); },
      common, 3);
  EXPECT_EQ(done.step, 6);
}

TEST_F(AutoencoderTask, EvaluationWritesOriginalsAboveReconstructions) {
  auto task = create({"eval.grid_images=10"});
  task->set_output_dir(path("out"));
  fs::create_directories(path("out"));
  task->evaluate();
  const Image grid = read_image(path("out/reconstructions.png"), 1);
  // 10 images, 8 per row: rows of originals / reconstructions / originals / reconstructions, 32 px + 2 px gaps.
  EXPECT_EQ(grid.width, 8 * 32 + 9 * 2);
  EXPECT_EQ(grid.height, 4 * 32 + 5 * 2);
  const ImageDataset test = load_fashion_mnist(default_fashion_mnist_root(), "test");
  const auto bytes = test.images.to_vector<int64_t>();
  auto pixel = [&](int64_t row, int64_t col, int64_t y, int64_t x) {
    return int64_t(grid.pixels[size_t((2 + row * 34 + y) * grid.width + 2 + col * 34 + x)]);
  };
  for (int64_t image : {0, 7, 9}) {  // row 0 holds images 0-7, row 2 images 8-9
    const int64_t row = image < 8 ? 0 : 2, col = image % 8;
    for (int64_t y = 0; y < 28; ++y)
      for (int64_t x = 0; x < 28; ++x)
        ASSERT_EQ(pixel(row, col, y + 2, x + 2), bytes[size_t((image * 28 + y) * 28 + x)])
            << "image " << image << " at " << y << ", " << x;
    EXPECT_EQ(pixel(row, col, 0, 0), 0) << "the padding is black";
  }
  // Without an output folder nothing is written (training without a run folder, tests).
  auto quiet = create({"eval.grid_images=4"});
  quiet->evaluate();
}

TEST_F(AutoencoderTask, EvalSplitTrainEvaluatesTheTrainingImagesInOrder) {
  const auto a = create({"data.eval_split=train", "data.eval_limit=16", "eval.batch_size=16"})->evaluate();
  const auto b = create({"data.eval_split=test", "data.eval_limit=16", "eval.batch_size=16"})->evaluate();
  const auto c = create({"data.eval_split=val", "data.eval_limit=16", "eval.batch_size=16"})->evaluate();
  EXPECT_NE(a.at("mse"), b.at("mse"));
  EXPECT_EQ(b.at("mse"), c.at("mse"));  // val means test for Fashion-MNIST
  test::expect_error<ConfigError>([&] { create({"data.eval_split=dev"}); }, {"data.eval_split", "'dev'"});
}

TEST_F(AutoencoderTask, RejectsModelsAndPaddingTheConfigCannotBuild) {
  test::expect_error<ConfigError>([&] { create({"data.pad_to=20"}); }, {"data.pad_to 20", "28 pixels"});
  test::expect_error<ConfigError>([&] { create({"data.pad_to=31"}); }, {"data.pad_to 31", "even"});
  test::expect_error<ConfigError>([&] { create({"data.pad_to=0", "model.channel_mult=[1, 2, 2, 2]"}); },
                                  {"28", "downsample factor 8"});
  test::expect_error<ConfigError>([&] { create({"model.norm_groups=3"}); }, {"model.", "norm_groups 3"});
  test::expect_error([&] { create({"data.root=" + path("nowhere")}); }, {"nowhere"});
}

TEST(PadImages, CentresTheImageOnTheBackground) {
  const Tensor x = from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  EXPECT_EQ(pad_images(x, 4).to_vector<float>(),
            (std::vector<float>{-1, -1, -1, -1, -1, 1, 2, -1, -1, 3, 4, -1, -1, -1, -1, -1}));
  EXPECT_EQ(pad_images(x, 0).raw_data(), x.raw_data());
  EXPECT_EQ(pad_images(x, 2).raw_data(), x.raw_data());
  test::expect_error<Error>([&] { pad_images(x, 3); }, {"data.pad_to", "3 x 3"});
}

}  // namespace
}  // namespace moh
