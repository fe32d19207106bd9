// The HDF5 latent file (data/latent_file.h): a streamed write read back by random-access batches, through
// open_latent_source too; the validation of every attribute and dataset on open; the writer's argument
// checks; and that a failed or abandoned write leaves no file under the final name (nor its temp file).
#include <gtest/gtest.h>

#include <filesystem>

#include "core/factory.h"
#include "core/io/hdf5_file.h"
#include "core/ops.h"
#include "data/latent_file.h"
#include "tests/test_util.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

class LatentFileTest : public test::TempDirTest {
 protected:
  // Writes n latents [n, 4, 2, 3] (seeded) with labels i % 5 in batches of 3; returns the latents.
  Tensor write_file(const std::string& file, int64_t n, std::optional<double> scale = 0.5) const {
    const Tensor latents = test::rand_t({n, 4, 2, 3}, 7);
    LatentFileWriter w(file, {n, {4, 2, 3}, 5, "sample", scale});
    for (int64_t b = 0; b < n; b += 3) {
      const int64_t k = std::min<int64_t>(3, n - b);
      std::vector<int64_t> labels;
      for (int64_t i = b; i < b + k; ++i) labels.push_back(i % 5);
      w.write(latents.narrow(0, b, k), from_vector<int64_t>(labels, {k}));
    }
    EXPECT_EQ(w.written(), n);
    w.finish();
    return latents;
  }
  // A valid 2-sample file, then `edit` applied to it.
  std::string edited_file(const std::function<void(Hdf5File&)>& edit) const {
    static int count = 0;
    const std::string file = path("edited" + std::to_string(count++) + ".h5");
    write_file(file, 2);
    Hdf5File f(file, Hdf5File::Mode::ReadWrite);
    edit(f);
    f.close();
    return file;
  }
};

using test::expect_error;
using test::expect_same_bytes;

TEST_F(LatentFileTest, StreamedWriteReadsBackInAnyOrder) {
  const std::string file = path("latents.h5");
  const Tensor latents = write_file(file, 8);
  EXPECT_FALSE(fs::exists(file + ".tmp"));
  for (const auto& source : {open_latent_file(file), open_latent_source(file)}) {
    EXPECT_EQ(source->size(), 8);
    EXPECT_EQ(source->latent_shape(), (Shape{4, 2, 3}));
    EXPECT_EQ(source->num_classes(), 5);
    EXPECT_EQ(source->scale_factor(), 0.5);
    EXPECT_EQ(source->posterior(), "sample");
    EXPECT_EQ(source->path(), file);
    const std::vector<int64_t> order{5, 6, 7, 0, 3, 3, 2};
    const LatentBatch batch = source->read(order);
    ASSERT_EQ(batch.latents.shape(), (Shape{7, 4, 2, 3}));
    for (size_t k = 0; k < order.size(); ++k) {
      expect_same_bytes(batch.latents.select(0, int64_t(k)).contiguous(), latents.select(0, order[k]),
                        "sample " + std::to_string(order[k]));
      EXPECT_EQ(batch.labels.to_vector<int64_t>()[k], order[k] % 5);
    }
    expect_error([&] { source->read({1, 8}); }, {file, "sample index 8 is outside [0, 8)"});
    EXPECT_EQ(source->read({}).latents.shape(), (Shape{0, 4, 2, 3}));
  }
  EXPECT_EQ(open_latent_file(file, 0.25)->scale_factor(), 0.25);
}

TEST_F(LatentFileTest, OpenValidatesFormatAttributesAndDatasets) {
  const std::vector<std::pair<std::function<void(Hdf5File&)>, std::string>> cases{
      {[](Hdf5File& f) { f.set_attr_string("/", "format", "other"); }, "attribute format is \"other\""},
      {[](Hdf5File& f) { f.set_attr_int("/", "version", 2); }, "version 2 is not supported"},
      {[](Hdf5File& f) { f.set_attr_double("/", "scale_factor", -1); }, "scale_factor must be a finite number > 0"},
      {[](Hdf5File& f) { f.set_attr_string("/", "scale_factor", "x"); }, "attribute 'scale_factor' is not a float"},
      {[](Hdf5File& f) { f.set_attr_string("/", "posterior", "mode"); }, "posterior must be \"mean\" or \"sample\""},
      {[](Hdf5File& f) { f.set_attr_int("/", "num_classes", 0); }, "num_classes must be >= 1"},
      {[](Hdf5File& f) { f.set_attr_int("/", "num_classes", 1); }, "label of sample 1 is 1, outside [0, 1)"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string file = edited_file(cases[i].first);
    expect_error([&] { open_latent_file(file); }, {file, cases[i].second});
  }
  // Files whose datasets are wrong, written from scratch.
  auto file_with = [&](const std::string& name, const Tensor& latents, const Tensor& labels, bool with_format = true) {
    const std::string file = path(name);
    Hdf5File f(file, Hdf5File::Mode::Create);
    if (latents.defined()) f.write_tensor("latents", latents);
    if (labels.defined()) f.write_tensor("labels", labels);
    if (with_format) f.set_attr_string("/", "format", kLatentFileFormat);
    f.set_attr_int("/", "version", 1);
    f.set_attr_double("/", "scale_factor", 1.0);
    f.set_attr_string("/", "posterior", "mean");
    f.set_attr_int("/", "num_classes", 3);
    f.close();
    return file;
  };
  const Tensor labels = zeros({2}, DType::Int64);
  const std::vector<std::pair<std::string, std::string>> bad{
      {file_with("no_format.h5", zeros({2, 1, 1, 1}), labels, false), "missing root attribute 'format'"},
      {file_with("no_latents.h5", Tensor(), labels), "missing dataset '/latents'"},
      {file_with("rank3.h5", zeros({2, 1, 1}), labels), "/latents must be float32 [N, C, H, W], got float32 [2, 1, 1]"},
      {file_with("f64.h5", zeros({2, 1, 1, 1}, DType::Float64), labels), "got float64"},
      {file_with("short_labels.h5", zeros({2, 1, 1, 1}), zeros({1}, DType::Int64)), "/labels must be int64 [2]"},
      {file_with("i32_labels.h5", zeros({2, 1, 1, 1}), zeros({2}, DType::Int32)), "/labels must be int64 [2]"},
      {file_with("neg_label.h5", zeros({2, 1, 1, 1}), full({2}, -1, DType::Int64)), "label of sample 0 is -1"},
  };
  for (const auto& entry : bad) {  // not structured bindings: clang 14 cannot capture those
    const std::string& file = entry.first;
    expect_error([&] { open_latent_file(file); }, {file, entry.second});
  }
  expect_error([&] { open_latent_file(path("missing.h5")); }, {path("missing.h5"), "no such file"});
}

TEST_F(LatentFileTest, WriterChecksItsArguments) {
  const std::string file = path("w.h5");
  expect_error([&] { LatentFileWriter(file, {2, {4, 2}, 5, "mean", 1.0}); }, {file, "latent_shape must be [C, H, W]"});
  expect_error([&] { LatentFileWriter(file, {2, {4, 2, 2}, 0, "mean", 1.0}); }, {"num_classes must be >= 1"});
  expect_error([&] { LatentFileWriter(file, {2, {4, 2, 2}, 3, "median", 1.0}); }, {"posterior must be"});
  expect_error([&] { LatentFileWriter(file, {2, {4, 2, 2}, 3, "mean", 0.0}); }, {"scale_factor must be"});
  LatentFileWriter w(file, {3, {1, 2, 2}, 3, "mean", {}});
  expect_error(
      [&] {
        w.write(zeros({2, 1, 2, 3}), zeros({2}, DType::Int64));
      },
      {file, "latents must be float32 [B, 1, 2, 2], got float32[2, 1, 2, 3]"});
  expect_error([&] { w.write(zeros({2, 1, 2, 2}), zeros({3}, DType::Int64)); }, {"labels must be int64 [2]"});
  expect_error(
      [&] {
        w.write(zeros({2, 1, 2, 2}), full({2}, 3, DType::Int64));
      },
      {"label of sample 0 is 3, outside [0, 3)"});
  w.write(zeros({2, 1, 2, 2}), zeros({2}, DType::Int64));
  expect_error(
      [&] {
        w.write(zeros({2, 1, 2, 2}), zeros({2}, DType::Int64));
      },
      {"2 of 3 samples written, 2 more do not fit"});
  expect_error([&] { w.finish(1.0); }, {"only 2 of 3 samples were written"});
  w.write(zeros({1, 1, 2, 2}), zeros({1}, DType::Int64));
  expect_error([&] { w.finish(); }, {"no scale factor was given"});
  EXPECT_FALSE(fs::exists(file));
  w.finish(2.0);
  EXPECT_EQ(open_latent_file(file)->scale_factor(), 2.0);
  expect_error([&] { w.finish(2.0); }, {"already finished"});
}

TEST_F(LatentFileTest, AbandonedOrFailedWritesLeaveNoFile) {
  const std::string file = path("a.h5");
  {
    LatentFileWriter w(file, {4, {1, 1, 1}, 2, "mean", 1.0});
    w.write(zeros({2, 1, 1, 1}), zeros({2}, DType::Int64));
    EXPECT_TRUE(fs::exists(file + ".tmp"));
  }  // an encode that threw half-way
  EXPECT_FALSE(fs::exists(file));
  EXPECT_FALSE(fs::exists(file + ".tmp"));
  // A previous complete file stays untouched by a failed rewrite.
  write_file(file, 2);
  {
    LatentFileWriter w(file, {4, {1, 1, 1}, 2, "mean", 1.0});
    EXPECT_THROW(w.finish(), Error);
  }
  EXPECT_EQ(open_latent_file(file)->size(), 2);
  expect_error(
      [&] {
        LatentFileWriter(path("no/such/dir/x.h5"), {1, {1, 1, 1}, 1, "mean", 1.0});
      },
      {"no/such/dir/x.h5.tmp"});
}

}  // namespace
}  // namespace moh
