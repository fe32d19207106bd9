// Image folders on tiny trees written into a temp dir: the scan (sorted classes and files, extensions,
// hidden entries, errors), evaluation passes in id order (also a FolderImageSource shard), training
// order = EpochSampler's, bytes identical for any thread count and prefetch depth, exact resume from
// state(), corrupt files skipped with one warning, JPEG reduction close to a full decode, clean
// shutdown, option checks, and Fashion-MNIST written by moh_make_image_folder read back exactly
// (skipped without the dataset).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>

#include "data/epoch_sampler.h"
#include "data/fashion_mnist.h"
#include "data/folder_image_source.h"
#include "data/image_decode.h"
#include "data/image_folder.h"
#include "tests/data/image_test_util.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

// A flat colour whose first channel encodes `id` (any crop, flip or resize keeps it).
Image solid(int64_t id) {
  return test::make_image(6, 5, 3,
                    [id](int64_t, int64_t, int64_t k) { return uint8_t(k == 0 ? 10 + 20 * id : 90); });
}

class ImageFolder : public test::TempDirTest {
 protected:
  // Writes root/rel as PNG (.png, any case) or JPEG (anything else).
  void add(const std::string& rel, const Image& img) const {
    const fs::path p = dir_ / rel;
    fs::create_directories(p.parent_path());
    std::string ext = p.extension().string();
    for (char& ch : ext) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    write_file_bytes(p.string(), ext == ".png" ? encode_png(img) : encode_jpeg(img, 95));
  }
  // train/ and val/ with classes b (3 files), a (2), c (2): solid colours encoding ids 0..6.
  void solid_tree() const {
    for (const char* split : {"train", "val"}) {
      const std::string s = split;
      add(s + "/b/x1.png", solid(3));  // sorted ids: a/0, a/1, b/x0, b/x1, b/y, c/0, c/1
      add(s + "/b/x0.png", solid(2));
      add(s + "/b/y.PNG", solid(4));
      add(s + "/a/1.png", solid(1));
      add(s + "/a/0.png", solid(0));
      add(s + "/c/0.png", solid(5));
      add(s + "/c/1.png", solid(6));
    }
  }
  // Random images of varied sizes and both formats.
  void noise_tree(int64_t per_class) const {
    for (int64_t label = 0; label < 3; ++label)
      for (int64_t i = 0; i < per_class; ++i) {
        const uint32_t seed = uint32_t(label * 100 + i);
        add("train/class" + std::to_string(label) + "/" + std::to_string(i) + (i % 3 ? ".png" : ".jpg"),
            test::random_image(9 + seed % 17, 7 + seed % 23, 3, seed));
      }
  }
  ImageFolderOptions options(bool train) {
    ImageFolderOptions o;
    o.root = dir_.string();
    o.split = train ? "train" : "val";
    o.train = train;
    o.batch_size = 3;
    o.image_size = 8;
    o.threads = 2;
    o.prefetch = 2;
    o.seed = 7;
    o.warn = [this](const std::string& m) { warnings.push_back(m); };
    return o;
  }
  std::vector<std::string> warnings;
};

// The id each sample of a solid_tree batch came from (its first channel).
std::vector<int64_t> solid_ids(const ImageBatch& b) {
  std::vector<int64_t> ids;
  const int64_t plane = b.images.size(2) * b.images.size(3);
  const float* p = b.images.data<float>();
  for (int64_t i = 0; i < b.images.size(0); ++i) {
    const double v = (double(p[i * 3 * plane]) * 0.229 + 0.485) * 255;
    ids.push_back(std::lround((v - 10) / 20));
  }
  return ids;
}

std::vector<ImageBatch> take(ImageFolderLoader& loader, int count) {
  std::vector<ImageBatch> out;
  for (int i = 0; i < count; ++i) out.push_back(*loader.next());
  return out;
}

void expect_same(const std::vector<ImageBatch>& a, const std::vector<ImageBatch>& b,
                 const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    test::expect_same_bytes(a[i].images, b[i].images, what + " images " + std::to_string(i));
    test::expect_same_bytes(a[i].labels, b[i].labels, what + " labels " + std::to_string(i));
  }
}

TEST_F(ImageFolder, ScanSortsClassesFilesAndExtensions) {
  const Image img = solid(0);
  for (const char* name :
       {"train/zebra/b.JPG", "train/zebra/a.jpeg", "train/zebra/c.Jpeg", "train/zebra/sub/d.png",
        "train/apple/x.PNG", "train/apple/w.jpg", "train/Mango/m.png"})
    add(name, img);
  write("train/zebra/notes.txt", "not an image");
  write("train/zebra/e.gif", "GIF89a");
  write("train/zebra/.hidden.jpg", "x");
  write("train/apple/.cache/y.jpg", "x");
  write("train/.git/z.jpg", "x");
  write("train/README", "x");
  const ImageFolderIndex idx = scan_image_folder(dir_.string(), "train");
  EXPECT_EQ(idx.folder, (dir_ / "train").string());
  EXPECT_EQ(idx.classes, (std::vector<std::string>{"Mango", "apple", "zebra"}));  // byte order
  std::vector<std::string> rel;
  for (const auto& f : idx.files) rel.push_back(fs::relative(f, dir_ / "train").string());
  EXPECT_EQ(rel, (std::vector<std::string>{"Mango/m.png", "apple/w.jpg", "apple/x.PNG", "zebra/a.jpeg",
                                           "zebra/b.JPG", "zebra/c.Jpeg", "zebra/sub/d.png"}));
  EXPECT_EQ(idx.labels, (std::vector<int64_t>{0, 1, 1, 2, 2, 2, 2}));
}

TEST_F(ImageFolder, ScanErrors) {
  const std::string root = dir_.string();
  test::expect_error([&] { scan_image_folder(root, "train"); }, {"no folder", root + "/train"});
  fs::create_directories(dir_ / "train");
  test::expect_error([&] { scan_image_folder(root, "train"); }, {"no class folders", root + "/train"});
  fs::create_directories(dir_ / "train/a");
  fs::create_directories(dir_ / "train/b");
  write("train/a/readme.txt", "x");
  test::expect_error([&] { scan_image_folder(root, "train"); }, {"no images", root + "/train"});
  add("train/a/0.png", solid(0));
  EXPECT_EQ(scan_image_folder(root, "train").files.size(), 1u);  // an empty class folder is fine
  test::expect_error([&] { scan_image_folder(root, "val"); }, {"no folder", root + "/val"});
  add("val/a/0.png", solid(0));
  add("val/c/0.png", solid(0));
  test::expect_error([&] { scan_image_folder(root, "val"); }, {"differ", "missing b", "extra c"});
  fs::create_symlink("loop.png", dir_ / "train/a/loop.png");  // a file symlink to itself cannot be listed
  test::expect_error([&] { scan_image_folder(root, "train"); }, {"cannot list", root + "/train"});
  fs::remove_all(dir_ / "train");
  add("only/a/0.png", solid(0));
  test::expect_error([&] { scan_image_folder(root, "only"); }, {"no folder", root + "/train", "class list"});
}

TEST_F(ImageFolder, EvalPassInIdOrderThenEnds) {
  solid_tree();
  ImageFolderLoader loader(options(false));
  EXPECT_EQ(loader.size(), 7);
  EXPECT_EQ(loader.classes(), (std::vector<std::string>{"a", "b", "c"}));
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<int64_t> ids, labels;
    std::vector<int64_t> sizes;
    while (auto b = loader.next()) {
      EXPECT_EQ(b->images.shape(), (Shape{b->images.size(0), 3, 8, 8}));
      EXPECT_EQ(b->labels.dtype(), DType::Int64);
      sizes.push_back(b->images.size(0));
      for (int64_t id : solid_ids(*b)) ids.push_back(id);
      for (int64_t l : b->labels.to_vector<int64_t>()) labels.push_back(l);
    }
    EXPECT_EQ(sizes, (std::vector<int64_t>{3, 3, 1}));
    EXPECT_EQ(ids, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(labels, (std::vector<int64_t>{0, 0, 1, 1, 1, 2, 2}));
    EXPECT_FALSE(loader.next().has_value());
    EXPECT_EQ(loader.state(), (std::map<std::string, int64_t>{{"index", 7}}));
    loader.restart();
  }
  // Every pixel of a flat image is the normalised colour.
  const ImageBatch b = *loader.next();
  const auto v = b.images.to_vector<float>();
  for (int64_t i = 0; i < 64; ++i) EXPECT_NEAR(v[size_t(i)], (10 / 255.0 - 0.485) / 0.229, 1e-5);
  for (int64_t i = 64; i < 128; ++i) EXPECT_NEAR(v[size_t(i)], (90 / 255.0 - 0.456) / 0.224, 1e-5);
  loader.load_state({{"index", 5}});
  EXPECT_EQ(solid_ids(*loader.next()), (std::vector<int64_t>{5, 6}));
  test::expect_error([&] { loader.load_state({{"index", 8}}); }, {"index 8", "outside"});
  test::expect_error([&] { loader.load_state({{"epoch", 0}}); }, {"needs 'index'"});
  EXPECT_TRUE(warnings.empty());
}


// FolderImageSource's evaluation of a rank's shard: ids [begin, end) in order, within data.eval_limit.
TEST_F(ImageFolder, SourceEvaluatesASliceOfTheSplit) {
  solid_tree();
  FolderImageSource source(options(true), "val", 6);
  std::vector<int64_t> ids, sizes;
  source.for_each_eval_batch(2, 6, 3, [&](const ImageBatch& b) {
    sizes.push_back(b.labels.size(0));
    for (int64_t id : solid_ids(b)) ids.push_back(id);
  });
  EXPECT_EQ(ids, (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(sizes, (std::vector<int64_t>{3, 1}));
  test::expect_error([&] { source.for_each_eval_batch(4, 7, 3, [](const ImageBatch&) {}); },
                     {"eval samples [4, 7) are not within the 6 evaluated"});
}

TEST_F(ImageFolder, TrainOrderFollowsTheEpochSampler) {
  solid_tree();
  ImageFolderLoader loader(options(true));
  std::vector<int64_t> ids, labels;
  for (const ImageBatch& b : take(loader, 7)) {  // 21 samples: three epochs of 7
    for (int64_t id : solid_ids(b)) ids.push_back(id);
    for (int64_t l : b.labels.to_vector<int64_t>()) labels.push_back(l);
  }
  const std::vector<int64_t> label_of = {0, 0, 1, 1, 1, 2, 2};
  for (int64_t e = 0; e < 3; ++e) {
    const std::vector<int64_t> perm = epoch_permutation(7, e, 7);
    for (int64_t k = 0; k < 7; ++k) {
      EXPECT_EQ(ids[size_t(e * 7 + k)], perm[size_t(k)]) << "epoch " << e << " position " << k;
      EXPECT_EQ(labels[size_t(e * 7 + k)], label_of[size_t(perm[size_t(k)])]);
    }
  }
  EXPECT_EQ(loader.state(),
            (std::map<std::string, int64_t>{{"epoch", 2}, {"index", 7}, {"shuffle_seed", 7}}));
}

TEST_F(ImageFolder, SameBytesForAnyThreadCount) {
  noise_tree(4);
  auto run = [&](int64_t threads, int64_t prefetch, uint64_t seed) {
    ImageFolderOptions o = options(true);
    o.threads = threads;
    o.prefetch = prefetch;
    o.seed = seed;
    o.batch_size = 5;
    ImageFolderLoader loader(o);
    return take(loader, 6);  // crosses two epochs of 12
  };
  const auto one = run(1, 1, 3);
  expect_same(one, run(4, 5, 3), "1 vs 4 threads");
  expect_same(one, run(3, 2, 3), "1 vs 3 threads");
  const auto other = run(2, 2, 4);
  EXPECT_NE(std::memcmp(one[0].images.raw_data(), other[0].images.raw_data(), one[0].images.nbytes()), 0);
  // Augmentation really varies: the same id in two epochs gets a different crop.
  const auto v = one[0].images.to_vector<float>();
  EXPECT_GT(*std::max_element(v.begin(), v.end()), 1.0f);
}

TEST_F(ImageFolder, FlipProbability) {
  noise_tree(4);
  auto run = [&](double hflip) {
    ImageFolderOptions o = options(true);
    o.hflip = hflip;
    o.batch_size = 12;
    ImageFolderLoader loader(o);
    return take(loader, 4);
  };
  // The flip is drawn after the crop, so p = 1 mirrors exactly what p = 0 gives; p = 0.5 mirrors about half.
  const auto never = run(0), always = run(1), half = run(0.5);
  int64_t flipped = 0;
  for (size_t b = 0; b < never.size(); ++b) {
    const auto n = never[b].images.to_vector<float>(), a = always[b].images.to_vector<float>();
    const auto h = half[b].images.to_vector<float>();
    for (int64_t i = 0; i < 12; ++i) {
      bool mirrored = true, same = true;
      for (int64_t row = 0; row < 3 * 8; ++row)
        for (int64_t x = 0; x < 8; ++x) {
          const size_t at = size_t((i * 24 + row) * 8 + x), mirror = size_t((i * 24 + row) * 8 + 7 - x);
          EXPECT_EQ(a[at], n[mirror]);
          mirrored = mirrored && h[at] == n[mirror];
          same = same && h[at] == n[at];
        }
      EXPECT_TRUE(mirrored != same) << "batch " << b << " sample " << i;
      flipped += mirrored;
    }
  }
  EXPECT_GT(flipped, 12);
  EXPECT_LT(flipped, 36);
}

TEST_F(ImageFolder, ResumesExactlyFromState) {
  noise_tree(3);
  ImageFolderOptions o = options(true);
  o.batch_size = 4;
  ImageFolderLoader a(o);
  take(a, 3);
  const auto state = a.state();
  EXPECT_EQ(state, (std::map<std::string, int64_t>{{"epoch", 1}, {"index", 3}, {"shuffle_seed", 7}}));
  const auto want = take(a, 4);
  // A new loader (other thread count) and the same loader moved back both continue identically.
  o.threads = 3;
  o.prefetch = 3;
  ImageFolderLoader b(o);
  b.load_state(state);
  EXPECT_EQ(b.state(), state);
  expect_same(take(b, 4), want, "new loader");
  a.load_state(state);
  expect_same(take(a, 4), want, "same loader");
  auto wrong_seed = state;
  wrong_seed["shuffle_seed"] = 8;
  test::expect_error([&] { a.load_state(wrong_seed); }, {"seed 8"});
  test::expect_error([&] { a.load_state({{"epoch", 0}, {"index", 10}}); }, {"outside an epoch"});
  test::expect_error([&] { a.restart(); }, {"only evaluation loaders"});
  expect_same(take(a, 1), take(b, 1), "after failed loads");  // a failed load changes nothing
}

TEST_F(ImageFolder, CorruptFilesAreSkippedWithOneWarning) {
  solid_tree();
  write_file_bytes(path("train/b/x1.png"), {'n', 'o', 'p', 'e'});  // id 3: garbage
  const std::vector<uint8_t> png = encode_png(solid(5));
  write_file_bytes(path("train/c/0.png"),
                   {png.begin(), png.begin() + long(png.size()) - 30});  // id 5: truncated
  std::vector<std::vector<ImageBatch>> runs;
  for (int64_t threads : {1, 4}) {
    warnings.clear();
    ImageFolderOptions o = options(true);
    o.threads = threads;
    ImageFolderLoader loader(o);
    std::vector<int64_t> ids;
    runs.push_back(take(loader, 7));
    for (const ImageBatch& b : runs.back())
      for (int64_t id : solid_ids(b)) ids.push_back(id);
    // id 3 (b/x1.png) is replaced by id 4, id 5 (c/0.png) by id 6; the rest follows the permutation.
    for (int64_t e = 0; e < 3; ++e) {
      const auto perm = epoch_permutation(7, e, 7);
      for (int64_t k = 0; k < 7; ++k) {
        const int64_t id = perm[size_t(k)];
        EXPECT_EQ(ids[size_t(e * 7 + k)], id == 3   ? 4
                                          : id == 5 ? 6
                                                    : id)
            << threads << " threads, epoch " << e << " id " << id;
      }
    }
    ASSERT_EQ(warnings.size(), 2u) << threads << " threads";
    std::sort(warnings.begin(), warnings.end());
    EXPECT_NE(warnings[0].find("train/b/x1.png"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("not a JPEG or PNG"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[1].find("train/c/0.png"), std::string::npos) << warnings[1];
  }
  expect_same(runs[0], runs[1], "1 vs 4 threads with corrupt files");
}

TEST_F(ImageFolder, NoReadableFileThrows) {
  for (const char* name : {"train/a/0.jpg", "train/a/1.png", "train/b/0.jpg"}) write(name, "garbage");
  ImageFolderLoader loader(options(true));
  test::expect_error([&] { loader.next(); }, {"none of the 3 images", dir_.string() + "/train"});
  EXPECT_EQ(warnings.size(), 3u);
}

TEST_F(ImageFolder, DestructorJoinsMidEpoch) {
  noise_tree(6);
  for (int64_t threads : {1, 4}) {
    ImageFolderOptions o = options(true);
    o.threads = threads;
    o.prefetch = 4;
    o.batch_size = 7;
    { ImageFolderLoader idle(o); }  // destroyed while its first batches are being prepared
    ImageFolderLoader loader(o);
    loader.next();
    loader.load_state({{"epoch", 3}, {"index", 5}});
  }
  SUCCEED();
}

TEST_F(ImageFolder, JpegReductionIsCloseToAFullDecode) {
  // A smooth 256x192 photo-sized JPEG evaluated at 16x16: decoded at 1/8 size with reduction.
  add("train/a/big.jpg", test::make_image(256, 192, 3, [](int64_t y, int64_t x, int64_t k) {
        return uint8_t(128 + 80 * std::sin(0.02 * double(x) + double(k)) * std::cos(0.015 * double(y)));
      }));
  add("val/a/big.jpg", solid(0));
  for (bool train : {false, true}) {
    ImageFolderOptions o = options(train);
    o.split = "train";
    o.image_size = 16;
    o.batch_size = 1;
    ImageFolderLoader fast(o);
    o.jpeg_reduction = false;
    ImageFolderLoader full(o);
    for (int i = 0; i < 3; ++i) {
      const auto a = fast.next()->images.to_vector<float>(), b = full.next()->images.to_vector<float>();
      double worst = 0;
      for (size_t j = 0; j < a.size(); ++j) worst = std::max(worst, double(std::abs(a[j] - b[j])));
      EXPECT_LT(worst, 0.15) << (train ? "train" : "eval") << " batch " << i;  // ~8 grey levels
      if (!train) fast.restart(), full.restart();
    }
  }
}

TEST_F(ImageFolder, BadOptions) {
  solid_tree();
  const std::vector<std::pair<std::function<void(ImageFolderOptions&)>, std::string>> cases = {
      {[](ImageFolderOptions& o) { o.root.clear(); }, "root and split"},
      {[](ImageFolderOptions& o) { o.batch_size = 0; }, "batch_size"},
      {[](ImageFolderOptions& o) { o.image_size = 0; }, "image_size"},
      {[](ImageFolderOptions& o) { o.channels = 2; }, "channels must be 1 or 3"},
      {[](ImageFolderOptions& o) { o.channels = 1; }, "one value per channel (1)"},
      {[](ImageFolderOptions& o) { o.eval_resize = 7; }, "eval_resize"},
      {[](ImageFolderOptions& o) {
         o.scale = {0.5, 0.2};
       },
       "scale"},
      {[](ImageFolderOptions& o) {
         o.ratio = {-1, 1};
       },
       "ratio"},
      {[](ImageFolderOptions& o) { o.hflip = 1.5; }, "hflip"},
      {[](ImageFolderOptions& o) {
         o.std_dev = {1, 0, 1};
       },
       "std_dev values must be > 0"},
      {[](ImageFolderOptions& o) { o.threads = 0; }, "threads"},
      {[](ImageFolderOptions& o) { o.prefetch = 0; }, "prefetch"},
      {[](ImageFolderOptions& o) { o.split = "test"; }, "no folder"},
  };
  for (const auto& [edit, message] : cases) {
    ImageFolderOptions o = options(true);
    edit(o);
    test::expect_error([&] { ImageFolderLoader loader(o); }, {message});
  }
  ImageFolderOptions grey = options(false);
  grey.channels = 1;
  grey.mean = {0.5f};
  grey.std_dev = {0.5f};
  ImageFolderLoader loader(grey);
  EXPECT_EQ(loader.next()->images.shape(), (Shape{3, 1, 8, 8}));
}

TEST_F(ImageFolder, FashionMnistWrittenByTheToolReadsBack) {
  const std::string source = default_fashion_mnist_root();
  if (!fs::exists(fs::path(source) / "t10k-images-idx3-ubyte.gz") &&
      !fs::exists(fs::path(source) / "t10k-images-idx3-ubyte"))
    GTEST_SKIP() << source << " not found (install the Debian package dataset-fashion-mnist)";
  const std::string root = path("fmnist");
  const std::string cmd = MOH_TEST_PATH(MOH_MAKE_IMAGE_FOLDER_PATH) + " --out " + root +
                          " --format mixed --limit 40 --source " + source + " > " + path("log") + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  ImageFolderOptions o = options(false);
  o.root = root;
  o.channels = 1;
  o.image_size = 28;
  o.eval_resize = 28;  // 28x28 files: the eval transform is the identity
  o.batch_size = 16;
  o.mean = {0.0f};
  o.std_dev = {1.0f};
  ImageFolderLoader val(o);
  EXPECT_EQ(val.size(), 40);
  EXPECT_EQ(val.classes(),
            (std::vector<std::string>{"Ankle_boot", "Bag", "Coat", "Dress", "Pullover", "Sandal", "Shirt",
                                      "Sneaker", "T-shirt_top", "Trouser"}));
  const ImageDataset test = load_fashion_mnist(source, "test");
  const auto& names = fashion_mnist_class_names();
  int64_t seen = 0, at = 0;
  while (auto b = val.next()) {
    const auto pixels = b->images.to_vector<float>();
    const auto labels = b->labels.to_vector<int64_t>();
    for (int64_t i = 0; i < b->images.size(0); ++i, ++at) {
      const fs::path file = val.index().files[size_t(at)];
      const int64_t source_index = std::stoll(file.stem().string());
      const int64_t want_label = test.labels.to_vector<int64_t>()[size_t(source_index)];
      EXPECT_EQ(val.classes()[size_t(labels[size_t(i)])], file.parent_path().filename().string());
      std::string folder = names[size_t(want_label)];
      for (char& ch : folder)
        if (ch == '/' || ch == ' ') ch = '_';
      EXPECT_EQ(val.classes()[size_t(labels[size_t(i)])], folder);
      EXPECT_EQ(file.extension() == ".png", source_index % 2 == 1) << file;
      const uint8_t* orig = test.images.data<uint8_t>() + source_index * 784;
      double worst = 0;
      for (int64_t p = 0; p < 784; ++p)
        worst = std::max(worst, std::abs(double(pixels[size_t(i * 784 + p)]) * 255 - orig[p]));
      EXPECT_LT(worst, file.extension() == ".png" ? 1e-3 : 40.0) << file;
      ++seen;
    }
  }
  EXPECT_EQ(seen, 40);
  // Training on it: 3-channel float batches with labels in range.
  o.train = true;
  o.split = "train";
  o.channels = 3;
  o.mean = {0.5f, 0.5f, 0.5f};
  o.std_dev = {0.5f, 0.5f, 0.5f};
  o.image_size = 24;
  ImageFolderLoader train(o);
  const ImageBatch b = *train.next();
  EXPECT_EQ(b.images.shape(), (Shape{16, 3, 24, 24}));
  for (int64_t l : b.labels.to_vector<int64_t>()) EXPECT_TRUE(l >= 0 && l < 10);
  EXPECT_TRUE(warnings.empty());
}

}  // namespace
}  // namespace moh
