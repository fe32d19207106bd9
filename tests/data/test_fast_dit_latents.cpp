// fast-DiT latent folders (data/fast_dit_latents.h): the layout extract_features.py writes, read through
// open_latent_source from the root; numeric name order ("10" after "9"); byte order for other names; explicit
// folders; and the errors, each naming the file: unpaired names, shapes differing between files, wrong
// dtypes or label shapes, labels outside num_classes, a corrupt feature file found on open or on read.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/factory.h"
#include "core/io/npy.h"
#include "core/ops.h"
#include "data/fast_dit_latents.h"
#include "tests/test_util.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

class FastDitLatentsTest : public test::TempDirTest {
 protected:
  std::string features() const { return path("imagenet256_features"); }
  std::string labels() const { return path("imagenet256_labels"); }
  // Sample `name` with latent value `v` everywhere ((1, 4, 2, 2) float32, as extract_features.py saves) and `label`.
  void add(const std::string& name, float v, int64_t label) const {
    fs::create_directories(features());
    fs::create_directories(labels());
    save_npy(features() + "/" + name + ".npy", full({1, 4, 2, 2}, v));
    save_npy(labels() + "/" + name + ".npy", full({1}, double(label), DType::Int64));
  }
};

using test::expect_error;

TEST_F(FastDitLatentsTest, ReadsExtractFeaturesLayoutInNumericOrder) {
  for (int i = 0; i < 12; ++i) add(std::to_string(i), float(i), (i * 7) % 10);
  std::ofstream(features() + "/notes.txt") << "ignored: not .npy";
  const auto source = open_latent_source(dir_.string());
  EXPECT_EQ(source->size(), 12);
  EXPECT_EQ(source->latent_shape(), (Shape{4, 2, 2}));
  EXPECT_EQ(source->num_classes(), 10);  // the largest label (9) + 1
  EXPECT_EQ(source->scale_factor(), 1.0);
  EXPECT_EQ(source->posterior(), "sample");
  const LatentBatch batch = source->read({10, 9, 2, 11});
  ASSERT_EQ(batch.latents.shape(), (Shape{4, 4, 2, 2}));
  const std::vector<float> v = batch.latents.to_vector<float>();
  for (int k = 0; k < 4; ++k) EXPECT_EQ(v[size_t(k) * 16], (std::vector<float>{10, 9, 2, 11}[size_t(k)])) << k;
  EXPECT_EQ(batch.labels.to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 4, 7}));
  expect_error([&] { source->read({12}); }, {features(), "sample index 12 is outside [0, 12)"});
}

TEST_F(FastDitLatentsTest, SortsOtherNamesByteWiseAndTakesExplicitFoldersAndOptions) {
  fs::create_directories(path("f"));
  fs::create_directories(path("l"));
  const std::vector<std::string> names{"b", "a10", "a9"};
  for (size_t i = 0; i < names.size(); ++i) {
    save_npy(path("f/" + names[i] + ".npy"), full({4, 2, 2}, double(i)));  // (C, H, W) is accepted too
    save_npy(path("l/" + names[i] + ".npy"), scalar_tensor(double(i), DType::Int32));
  }
  LatentSourceOptions options;
  options.scale_factor = 0.18215;
  options.num_classes = 1000;
  const auto source = open_fast_dit_latents(path("f"), path("l"), options);
  EXPECT_EQ(source->num_classes(), 1000);
  EXPECT_EQ(source->scale_factor(), 0.18215);
  // "a10" < "a9" < "b" byte-wise.
  EXPECT_EQ(source->read({0, 1, 2}).labels.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 0}));
  options.features_dir = "f";
  options.labels_dir = path("l");  // absolute
  EXPECT_EQ(open_latent_source(dir_.string(), options)->size(), 3);
}

TEST_F(FastDitLatentsTest, RejectsUnpairedNamesAndBadFilesNamingThem) {
  for (int i = 0; i < 3; ++i) add(std::to_string(i), 0, 1);
  save_npy(features() + "/3.npy", zeros({1, 4, 2, 2}));
  expect_error([&] { open_latent_source(dir_.string()); },
               {features() + "/3.npy", "has no label file", labels() + "/3.npy"});
  fs::remove(features() + "/3.npy");
  save_npy(labels() + "/7.npy", zeros({1}, DType::Int64));
  expect_error([&] { open_latent_source(dir_.string()); }, {labels() + "/7.npy", "has no feature file"});
  fs::remove(labels() + "/7.npy");

  auto expect_open_error = [&](const std::string& file, const Tensor& t, const std::string& message) {
    const std::string saved = file + ".saved";
    fs::copy_file(file, saved);
    save_npy(file, t);
    expect_error([&] { open_latent_source(dir_.string()); }, {file, message});
    fs::rename(saved, file);
  };
  expect_open_error(features() + "/2.npy", zeros({1, 4, 2, 3}), "shape [1, 4, 2, 3] differs from [1, 4, 2, 2]");
  expect_open_error(features() + "/0.npy", zeros({1, 4, 2, 2}, DType::Float64),
                    "expected float32 (1, C, H, W) or (C, H, W), got float64");
  expect_open_error(features() + "/0.npy", zeros({2, 4, 2, 2}), "got float32 [2, 4, 2, 2]");
  expect_open_error(labels() + "/1.npy", zeros({2}, DType::Int64), "expected one int64 or int32 label");
  expect_open_error(labels() + "/1.npy", zeros({1}, DType::Float32), "expected one int64 or int32 label");
  expect_open_error(labels() + "/1.npy", full({1}, -3, DType::Int64), "label -3 is negative");
  LatentSourceOptions few;
  few.num_classes = 1;
  expect_error([&] { open_latent_source(dir_.string(), few); }, {labels(), "label 1 is outside [0, 1)"});

  // A feature file truncated after opening (or with checking on open switched off) fails when read.
  std::ofstream(features() + "/1.npy", std::ios::binary | std::ios::trunc) << "\x93NUMPY";
  expect_error([&] { open_latent_source(dir_.string()); }, {features() + "/1.npy", "not a .npy file"});
  LatentSourceOptions lazy;
  lazy.check_all_features = false;
  const auto source = open_latent_source(dir_.string(), lazy);
  EXPECT_EQ(source->read({0, 2}).latents.shape(), (Shape{2, 4, 2, 2}));
  expect_error([&] { source->read({1}); }, {features() + "/1.npy", "not a .npy file"});
}

TEST_F(FastDitLatentsTest, RejectsMissingFoldersAndPaths) {
  expect_error([&] { open_latent_source(path("nothing")); }, {path("nothing"), "does not exist"});
  fs::create_directories(features());
  expect_error([&] { open_latent_source(dir_.string()); }, {"without the fast-DiT sub-folders", labels()});
  fs::create_directories(labels());
  expect_error([&] { open_latent_source(dir_.string()); }, {features(), "holds no .npy files"});
}

}  // namespace
}  // namespace moh
