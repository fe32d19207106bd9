// `moh encode` and `moh decode` on a tiny trained autoencoder run (Fashion-MNIST): encode stores, in
// dataset order, the posterior means the checkpoint's model computes in-process, the dataset's labels and
// the measured scale factor; a sample differs from the mean and follows --seed; decode writes a grid of the
// expected size and one PNG per latent whose pixels are the model's decoding; bad flags and a non-
// autoencoder run exit 2, runtime failures 1, and a failed encode leaves no file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "autograd/tape.h"
#include "core/ops.h"
#include "data/fashion_mnist.h"
#include "data/image_decode.h"
#include "data/latent_source.h"
#include "tests/core/nn_test_util.h"
#include "tests/test_util.h"
#include "tests/tools/cli_test_util.h"
#include "tests/trainers/fashion_mnist_run.h"
#include "trainers/autoencoder_task.h"
#include "trainers/checkpoint.h"
#include "trainers/trainer.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

class LatentCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::fashion_mnist_installed()) return;
    dir_ = fs::temp_directory_path() / ("moh_LatentCli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(path("ae.yaml")) << "task: autoencoder\n"
                                      "run: {name: ae, dir: " << path("runs") << "}\n"
                                      "train: {steps: 6, batch_size: 8}\n"
                                      "eval: {every: 0, grid_images: 0}\n"
                                      "data: {train_limit: 64, eval_limit: 16}\n"
                                      "model: {base_channels: 8, norm_groups: 4}\n"
                                      "threads: 1\n";
    trained_ = test::moh("train " + path("ae.yaml"), false).status == 0;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  void SetUp() override {
    if (dir_.empty()) GTEST_SKIP() << test::kNoFashionMnist;
    ASSERT_TRUE(trained_) << "the autoencoder run did not train";
  }
  static std::string path(const std::string& name) { return (dir_ / name).string(); }
  static test::Result run(const std::string& args) { return test::moh(args + " 2> " + path("err.txt"), false); }
  static std::string stderr_text() {
    std::ifstream in(path("err.txt"));
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // The run's model as the checkpoint holds it.
  static std::unique_ptr<Autoencoder> model() {
    CheckpointManager manager(path("runs/ae/checkpoints"), 0);
    const CheckpointData data = load_checkpoint(*manager.latest_valid());
    const Config cfg = Config::parse(data.config_text, training_schema("autoencoder"), "stored", {});
    Generator gen(0);
    auto m = std::make_unique<Autoencoder>(autoencoder_options_from_config(cfg, 1), gen);
    m->load_state_dict(data.model);
    m->eval();
    return m;
  }
  static fs::path dir_;
  static bool trained_;
};
fs::path LatentCli::dir_;
bool LatentCli::trained_ = false;

TEST_F(LatentCli, EncodeStoresTheModelsMeansLabelsAndScaleFactor) {
  const test::Result r = run("encode " + path("runs/ae") + " --out " + path("lat.h5") + " --limit 20 --batch 8");
  ASSERT_EQ(r.status, 0) << stderr_text();
  EXPECT_NE(stderr_text().find("20/20 images"), std::string::npos) << stderr_text();
  EXPECT_NE(r.last_line().find("\"images\":20"), std::string::npos) << r.output;
  const auto source = open_latent_source(path("lat.h5"));
  ASSERT_EQ(source->size(), 20);
  EXPECT_EQ(source->latent_shape(), (Shape{4, 8, 8}));
  EXPECT_EQ(source->num_classes(), 10);
  EXPECT_EQ(source->posterior(), "mean");
  std::vector<int64_t> all(20);
  for (int64_t i = 0; i < 20; ++i) all[size_t(i)] = i;
  const LatentBatch stored = source->read(all);
  const ImageDataset train = load_fashion_mnist(default_fashion_mnist_root(), "train");
  EXPECT_EQ(stored.labels.to_vector<int64_t>(), train.labels.narrow(0, 0, 20).to_vector<int64_t>());
  // The same images through the checkpoint's model in this process: [-1, 1], padded to 32 with black.
  ag::NoGradGuard no_grad;
  const Tensor images = add(mul(train.images.narrow(0, 0, 20).to(DType::Float32), 2.0 / 255), -1.0).view({20, 1, 28, 28});
  const Tensor mean = model()->encode(ag::Variable(pad_images(images, 32))).mean.data();
  nn_test::expect_close(stored.latents, mean, 1e-4, "latents", 1e-5);
  const auto v = stored.latents.to_vector<double>();
  double s = 0, sq = 0;
  for (double x : v) s += x, sq += x * x;
  const double m = s / double(v.size()), sd = std::sqrt(sq / double(v.size()) - m * m);
  EXPECT_NEAR(source->scale_factor(), 1.0 / sd, 1e-6 / sd);

  ASSERT_EQ(run("encode " + path("runs/ae") + " --out " + path("s1.h5") + " --limit 8 --posterior sample --seed 3").status, 0);
  ASSERT_EQ(run("encode " + path("runs/ae") + " --out " + path("s2.h5") + " --limit 8 --posterior sample --seed 3").status, 0);
  ASSERT_EQ(run("encode " + path("runs/ae") + " --out " + path("s3.h5") + " --limit 8 --posterior sample --seed 4").status, 0);
  const std::vector<int64_t> first8{0, 1, 2, 3, 4, 5, 6, 7};
  const Tensor a = open_latent_source(path("s1.h5"))->read(first8).latents;
  EXPECT_EQ(open_latent_source(path("s1.h5"))->posterior(), "sample");
  test::expect_same_bytes(open_latent_source(path("s2.h5"))->read(first8).latents, a, "same seed");
  EXPECT_NE(open_latent_source(path("s3.h5"))->read(first8).latents.to_vector<float>(), a.to_vector<float>());
  EXPECT_NE(stored.latents.narrow(0, 0, 8).to_vector<float>(), a.to_vector<float>());
}

TEST_F(LatentCli, DecodeWritesAGridAndOnePngPerLatent) {
  ASSERT_EQ(run("encode " + path("runs/ae") + " --out " + path("d.h5") + " --limit 12 --split test").status, 0)
      << stderr_text();
  ASSERT_EQ(run("decode " + path("runs/ae") + " --latents " + path("d.h5") + " --out " + path("grid.png") +
                " --count 10 --columns 4 --crop 28")
                .status,
            0)
      << stderr_text();
  const Image grid = read_image(path("grid.png"), 1);
  EXPECT_EQ(grid.width, 4 * 28 + 5 * 2);
  EXPECT_EQ(grid.height, 3 * 28 + 4 * 2);
  ASSERT_EQ(run("decode " + path("runs/ae") + " --latents " + path("d.h5") + " --out " + path("files") +
                " --first 9 --count 100")
                .status,
            0)
      << stderr_text();
  for (const char* name : {"000009.png", "000010.png", "000011.png"}) EXPECT_TRUE(fs::exists(path("files/") + name));
  EXPECT_FALSE(fs::exists(path("files/000012.png")));
  // The file's pixels are the model's decoding of the stored latent, mapped from [-1, 1] to bytes.
  const Image one = read_image(path("files/000010.png"), 1);
  ASSERT_EQ(one.width, 32);
  ag::NoGradGuard no_grad;
  const Tensor z = open_latent_source(path("d.h5"))->read({10}).latents;
  const auto want = model()->decode(ag::Variable(z)).data().to_vector<double>();
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(double(one.pixels[i]), std::nearbyint(std::clamp((want[i] + 1) / 2, 0.0, 1.0) * 255), 1.0) << i;
}

TEST_F(LatentCli, BadInputsExitWithTheirStatusAndLeaveNoFile) {
  const std::string ae = path("runs/ae");
  for (const std::string& args :
       {"encode " + ae, "encode " + ae + " --out x.h5 --posterior median", "encode " + ae + " --out x.h5 --batch 0",
        "encode " + ae + " --out x.h5 --limit -1", "encode " + ae + " --out x.h5 --bogus 1",
        "encode " + ae + " --out x.h5 data.nothing=1", "encode " + ae + " --out x.h5 --split dev", "decode " + ae,
        "decode " + ae + " --latents x.h5", "decode " + ae + " --latents " + path("lat.h5") + " --out g.png --count 0"}) {
    EXPECT_EQ(run(args).status, 2) << args << ": " << stderr_text();
    const std::string err = stderr_text();
    EXPECT_TRUE(err.find("moh encode") != std::string::npos || err.find("moh decode") != std::string::npos) << err;
  }
  ASSERT_EQ(run("encode " + ae + " --out " + path("e.h5") + " --limit 4").status, 0);
  EXPECT_EQ(run("decode " + ae + " --latents " + path("e.h5") + " --out g.png --first 4").status, 2);
  // A latent file of the wrong channel count: a runtime failure naming both.
  EXPECT_EQ(run("encode " + ae + " --out " + path("none.h5") + " --limit 4 model.latent_channels=3").status, 1);
  EXPECT_FALSE(fs::exists(path("none.h5")));  // the checkpoint's weights do not fit: nothing is written
  EXPECT_FALSE(fs::exists(path("none.h5.tmp")));
  EXPECT_EQ(run("decode " + ae + " --latents " + path("nowhere.h5") + " --out g.png").status, 1);

  std::ofstream(path("syn.yaml")) << "task: synthetic\nrun: {name: syn, dir: " << path("runs")
                                  << "}\ntrain: {steps: 2, batch_size: 8}\ndata: {train_size: 64, eval_size: 32}\n";
  ASSERT_EQ(test::moh("train " + path("syn.yaml"), false).status, 0);
  const test::Result refused = run("encode " + path("runs/syn") + " --out " + path("syn.h5"));
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(stderr_text().find("a 'synthetic' run; moh encode needs a run of the autoencoder task"), std::string::npos)
      << stderr_text();
}

}  // namespace
}  // namespace moh
