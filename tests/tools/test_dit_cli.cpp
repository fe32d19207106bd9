// `moh sample`, `moh fid` and the DiT task's sample evaluation (eval.samples) on tiny trained runs (Fashion-MNIST): an
// autoencoder, a DiT on its latents and a ViT classifier. sample writes samples.npz (uint8 NHWC images, labels cycling
// through --classes) and a grid, reproduces its bytes with the same seed and differs with another; fid scores real
// held-out images far below the noise ceiling and noisier images between the two, reports the classifier's own accuracy
// on labelled images (equal to moh eval's on the same images), reuses saved reference statistics exactly, and refuses
// runs and images it cannot use; moh eval with eval.samples scores the same samples at every evaluation and writes
// their grid.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/factory.h"
#include "core/io/npz.h"
#include "core/ops.h"
#include "data/fashion_mnist.h"
#include "data/image_decode.h"
#include "tests/test_util.h"
#include "tests/tools/cli_test_util.h"
#include "tests/trainers/fashion_mnist_run.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

class DitCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!test::fashion_mnist_installed()) return;
    dir_ = fs::temp_directory_path() / ("moh_DitCli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(path("ae.yaml")) << "task: autoencoder\nrun: {name: ae, dir: " << path("runs")
                                   << "}\n"
                                      "train: {steps: 6, batch_size: 8}\neval: {every: 0, grid_images: 0}\n"
                                      "data: {train_limit: 64, eval_limit: 16}\n"
                                      "model: {base_channels: 8, norm_groups: 4}\nthreads: 1\n";
    std::ofstream(path("dit.yaml")) << "task: dit\nrun: {name: dit, dir: " << path("runs")
                                    << "}\n"
                                       "train: {steps: 4, batch_size: 8}\neval: {every: 0, use_ema: true}\n"
                                       "ema: {decay: 0.5}\ndiffusion: {steps: 50}\n"
                                       "model: {dim: 32, depth: 1, heads: 2}\n"
                                       "data: {latents: "
                                    << path("lat.h5") << ", autoencoder: " << path("runs/ae") << "}\nthreads: 1\n";
    std::ofstream(path("vit.yaml")) << "task: vit\nrun: {name: vit, dir: " << path("runs")
                                    << "}\n"
                                       "train: {steps: 40, batch_size: 64}\neval: {every: 0}\n"
                                       "optim: {lr: 0.003}\ndata: {train_limit: 2048, eval_limit: 500}\n"
                                       "model: {depth: 2}\nthreads: 1\n";
    ready_ = test::moh("train " + path("ae.yaml"), false).status == 0 &&
             test::moh("encode " + path("runs/ae") + " --out " + path("lat.h5") + " --limit 64", false).status == 0 &&
             test::moh("train " + path("dit.yaml"), false).status == 0 &&
             test::moh("train " + path("vit.yaml"), false).status == 0;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  void SetUp() override {
    if (dir_.empty()) GTEST_SKIP() << test::kNoFashionMnist;
    ASSERT_TRUE(ready_) << "the autoencoder, DiT or ViT run did not train";
  }
  static std::string path(const std::string& name) { return (dir_ / name).string(); }
  static test::Result run(const std::string& args) { return test::moh(args + " 2> " + path("err.txt"), false); }
  static std::string stderr_text() {
    std::ifstream in(path("err.txt"));
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  static nlohmann::json fid(const std::string& args) {
    const test::Result r = run("fid " + args + " --features " + path("runs/vit"));
    EXPECT_EQ(r.status, 0) << stderr_text();
    return r.status == 0 ? nlohmann::json::parse(r.last_line()) : nlohmann::json{};
  }
  // The first n test images as uint8 [n, 28, 28, 1] with their labels, `noise` of each pixel replaced by
  // uniform noise (0: the images themselves).
  static void write_real(const std::string& file, int64_t n, double noise) {
    const ImageDataset test = load_fashion_mnist(default_fashion_mnist_root(), "test");
    Generator gen(5);
    const Tensor pixels = test.images.narrow(0, 0, n).to(DType::Float32);
    const Tensor mixed = add(mul(pixels, 1 - noise), mul(uniform(pixels.shape(), 0, 255, gen), noise));
    save_npz(file, {{"arr_0", mixed.reshape({n, 28, 28, 1}).to(DType::UInt8).contiguous()},
                    {"arr_1", test.labels.narrow(0, 0, n).contiguous()}});
  }
  static fs::path dir_;
  static bool ready_;
};
fs::path DitCli::dir_;
bool DitCli::ready_ = false;

TEST_F(DitCli, SampleWritesImagesLabelsAndAGridReproducibly) {
  const std::string common = "sample " + path("runs/dit") + " --num 6 --steps 4 --cfg 2 --batch 4 --classes 3,7";
  const test::Result r = run(common + " --out " + path("s1") + " --seed 1 --crop 28 --columns 3 --pngs");
  ASSERT_EQ(r.status, 0) << stderr_text();
  const auto summary = nlohmann::json::parse(r.last_line());
  EXPECT_EQ(summary["samples"], 6);
  EXPECT_EQ(summary["weights"], "ema");
  const auto npz = load_npz(path("s1/samples.npz"));
  ASSERT_EQ(npz.at("arr_0").shape(), (Shape{6, 28, 28, 1}));
  EXPECT_EQ(npz.at("arr_0").dtype(), DType::UInt8);
  EXPECT_EQ(npz.at("arr_1").to_vector<int64_t>(), (std::vector<int64_t>{3, 7, 3, 7, 3, 7}));
  const Image grid = read_image(path("s1/grid.png"), 1);
  EXPECT_EQ(grid.width, 3 * 28 + 4 * 2);
  EXPECT_EQ(grid.height, 2 * 28 + 3 * 2);
  // One PNG per sample holds that sample's bytes.
  const Image fifth = read_image(path("s1/images/000004.png"), 1);
  EXPECT_EQ(fifth.pixels, npz.at("arr_0").narrow(0, 4, 1).contiguous().to_vector<uint8_t>());
  ASSERT_EQ(run(common + " --out " + path("s2") + " --seed 1 --crop 28").status, 0) << stderr_text();
  ASSERT_EQ(run(common + " --out " + path("s3") + " --seed 2 --crop 28").status, 0) << stderr_text();
  test::expect_same_bytes(load_npz(path("s2/samples.npz")).at("arr_0"), npz.at("arr_0"), "same seed");
  EXPECT_NE(load_npz(path("s3/samples.npz")).at("arr_0").to_vector<uint8_t>(), npz.at("arr_0").to_vector<uint8_t>());
}

TEST_F(DitCli, SampleRefusesWhatItCannotUse) {
  EXPECT_EQ(run("sample " + path("runs/vit") + " --out " + path("x")).status, 2);
  EXPECT_NE(stderr_text().find("needs a run of the dit task"), std::string::npos) << stderr_text();
  EXPECT_EQ(run("sample " + path("runs/dit") + " --out " + path("x") + " --classes 3,10").status, 2);
  EXPECT_NE(stderr_text().find("'10' is not a class in [0, 10)"), std::string::npos) << stderr_text();
  EXPECT_EQ(run("sample " + path("runs/dit") + " --out " + path("x") + " --steps 51").status, 2);
  EXPECT_NE(stderr_text().find("more than the 50"), std::string::npos) << stderr_text();
  EXPECT_EQ(run("sample " + path("runs/dit") + " --out " + path("x") + " --autoencoder " + path("runs/vit")).status, 2);
  EXPECT_NE(stderr_text().find("needs a run of the autoencoder task"), std::string::npos) << stderr_text();
}

TEST_F(DitCli, EvalScoresSamplesWithTheClassifierAndWritesTheirGrid) {
  const std::string args =
      "eval " + path("runs/dit") + " eval.samples=20 eval.sample_steps=3 eval.fid_classifier=" + path("runs/vit");
  const test::Result a = run(args), b = run(args);
  ASSERT_EQ(a.status, 0) << stderr_text();
  const auto first = nlohmann::json::parse(a.last_line()), second = nlohmann::json::parse(b.last_line());
  for (const char* key : {"fid", "fid_floor", "fid_ceiling", "sample_accuracy", "mse"})
    EXPECT_TRUE(first.contains(key)) << key;
  EXPECT_LT(double(first["fid_floor"]), double(first["fid_ceiling"]));
  EXPECT_EQ(first["fid"], second["fid"]);  // the same noise at every evaluation
  EXPECT_GT(double(first["fid"]), 0.0);
  EXPECT_GE(double(first["sample_accuracy"]), 0.0);
  const Image grid = read_image(path("runs/dit/checkpoints/samples.png"), 1);
  EXPECT_EQ(grid.width, 10 * 28 + 11 * 2);  // 10 classes per row, cropped to the classifier's 28
  EXPECT_EQ(grid.height, 2 * 28 + 3 * 2);
  // The keys the sample evaluation needs are checked before anything runs.
  EXPECT_EQ(run("eval " + path("runs/dit") + " eval.samples=4 eval.fid_classifier=" + path("runs/ae")).status, 2);
  EXPECT_NE(stderr_text().find("eval.fid_classifier needs an image classifier"), std::string::npos) << stderr_text();
  EXPECT_EQ(run("eval " + path("runs/dit") + " eval.samples=4 eval.sample_steps=51").status, 2);
  EXPECT_NE(stderr_text().find("eval.sample_steps 51 is more than diffusion.steps 50"), std::string::npos)
      << stderr_text();
}

TEST_F(DitCli, FidOrdersRealNoisyAndNoiseImages) {
  write_real(path("real.npz"), 200, 0.0);
  write_real(path("noisy.npz"), 200, 0.5);
  const auto real = fid(path("real.npz") + " --save-ref " + path("ref.npz"));
  const auto noisy = fid(path("noisy.npz"));
  ASSERT_FALSE(real.empty());
  ASSERT_FALSE(noisy.empty());
  EXPECT_EQ(real["samples"], 200);
  EXPECT_EQ(real["reference_images"], 500);  // the classifier's held-out split (data.eval_limit 500)
  const double ceiling = real["ceiling"];
  EXPECT_LT(double(real["floor"]), ceiling / 4);
  EXPECT_LT(double(real["fid"]), ceiling / 4);
  EXPECT_GT(double(noisy["fid"]), 2 * double(real["fid"]));
  EXPECT_LT(double(noisy["fid"]), ceiling);
  // Its accuracy on real labelled images is the classifier's own on them.
  const test::Result eval = run("eval " + path("runs/vit") + " data.eval_limit=200");
  ASSERT_EQ(eval.status, 0) << stderr_text();
  EXPECT_EQ(double(real["sample_accuracy"]), double(nlohmann::json::parse(eval.last_line())["top1"]));
  // Saved reference statistics give the same score.
  const auto again = fid(path("real.npz") + " --ref " + path("ref.npz"));
  EXPECT_EQ(again["fid"], real["fid"]);
}

TEST_F(DitCli, FidRefusesRunsAndImagesItCannotUse) {
  save_npz(path("big.npz"), {{"arr_0", zeros({4, 32, 32, 1}, DType::UInt8)}});
  EXPECT_EQ(run("fid " + path("big.npz") + " --features " + path("runs/vit")).status, 1);
  EXPECT_NE(stderr_text().find("uint8 [N, 28, 28, 1]"), std::string::npos) << stderr_text();
  EXPECT_EQ(run("fid " + path("big.npz") + " --features " + path("runs/dit")).status, 2);
  EXPECT_NE(stderr_text().find("needs an image classifier"), std::string::npos) << stderr_text();
  save_npz(path("empty.npz"), {{"x", zeros({1})}});
  EXPECT_EQ(run("fid " + path("empty.npz") + " --features " + path("runs/vit")).status, 1);
  EXPECT_NE(stderr_text().find("neither images (arr_0) nor statistics"), std::string::npos) << stderr_text();
}

}  // namespace
}  // namespace moh
