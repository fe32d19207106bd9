// IDX reader and Fashion-MNIST loader: every IDX type, raw and gzip, round-tripped through small files
// written here (big-endian, as the format says); every corruption the reader must reject with an error
// naming the file; the loader on tiny generated splits and its checks; and the real Debian dataset
// when /usr/share/datasets/fashion-mnist is installed.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "data/fashion_mnist.h"
#include "data/idx.h"
#include "tests/test_util.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

// The big-endian bytes of each value.
template <class T>
std::string be(const std::vector<T>& values) {
  std::string s;
  for (T v : values) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    for (size_t i = sizeof(T); i-- > 0;) s += char(b[i]);
  }
  return s;
}

// An IDX file: magic, type code, dims (big-endian uint32), then `data` as given.
std::string idx_file(uint8_t type, const std::vector<uint32_t>& dims, const std::string& data) {
  std::string s = {0, 0, char(type), char(dims.size())};
  return s + be(dims) + data;
}

class Idx : public test::TempDirTest {
 protected:
  std::string write_raw(const std::string& name, const std::string& bytes) const {
    const std::string p = path(name);
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  std::string write_gz(const std::string& name, const std::string& bytes) const {
    const std::string p = path(name);
    gzFile f = gzopen(p.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
    EXPECT_EQ(gzclose(f), Z_OK);
    return p;
  }
  std::string write(const std::string& name, const std::string& bytes, bool gz) const {
    return gz ? write_gz(name + ".gz", bytes) : write_raw(name, bytes);
  }
  // read_idx(p) must throw an Error naming p and holding every part.
  static void expect_read_error(const std::string& p, std::vector<std::string> parts) {
    parts.push_back(p);
    test::expect_error([&] { read_idx(p); }, parts);
  }
};

template <class T>
void expect_tensor(const Tensor& t, DType dtype, const Shape& shape, const std::vector<T>& values,
                   const std::string& what) {
  EXPECT_EQ(t.dtype(), dtype) << what;
  EXPECT_EQ(t.shape(), shape) << what;
  EXPECT_TRUE(t.is_contiguous()) << what;
  EXPECT_EQ(t.to_vector<T>(), values) << what;
}

TEST_F(Idx, EveryTypeRawAndGzip) {
  const std::vector<uint8_t> u8 = {0, 1, 127, 128, 200, 255};
  const std::vector<int8_t> i8 = {-128, -1, 0, 1, 127};
  const std::vector<int16_t> i16 = {-32768, -2, 300, 32767};
  const std::vector<int32_t> i32 = {std::numeric_limits<int32_t>::min(), -5, 123456789, 0x01020304};
  const std::vector<float> f32 = {1.5f, -2.25e-3f, 3.0e38f, 0.0f, -0.0f, 7.0f};
  const std::vector<double> f64 = {1.0 / 3.0, -1e300};
  for (bool gz : {false, true}) {
    const std::string how = gz ? " (gzip)" : " (raw)";
    expect_tensor<int32_t>(read_idx(write("u8", idx_file(0x08, {2, 3}, be(u8)), gz)), DType::UInt8, {2, 3},
                           {0, 1, 127, 128, 200, 255}, "uint8" + how);
    expect_tensor<int32_t>(read_idx(write("i8", idx_file(0x09, {5}, be(i8)), gz)), DType::Int32, {5},
                           {-128, -1, 0, 1, 127}, "int8" + how);
    expect_tensor<int32_t>(read_idx(write("i16", idx_file(0x0B, {2, 2}, be(i16)), gz)), DType::Int32, {2, 2},
                           {-32768, -2, 300, 32767}, "int16" + how);
    expect_tensor<int32_t>(read_idx(write("i32", idx_file(0x0C, {4, 1}, be(i32)), gz)), DType::Int32, {4, 1},
                           i32, "int32" + how);
    expect_tensor<float>(read_idx(write("f32", idx_file(0x0D, {1, 2, 3}, be(f32)), gz)), DType::Float32,
                         {1, 2, 3}, f32, "float32" + how);
    expect_tensor<double>(read_idx(write("f64", idx_file(0x0E, {2}, be(f64)), gz)), DType::Float64, {2}, f64,
                          "float64" + how);
  }
}

TEST_F(Idx, ScalarAndEmptyArrays) {
  expect_tensor<int32_t>(read_idx(write_raw("scalar", idx_file(0x0C, {}, be<int32_t>({-7})))), DType::Int32,
                         {}, {-7}, "0 dims");
  expect_tensor<float>(read_idx(write_gz("empty.gz", idx_file(0x0D, {0, 5}, ""))), DType::Float32, {0, 5}, {},
                       "dim of size 0");
}

TEST_F(Idx, MissingFile) {
  expect_read_error(path("nope-idx1-ubyte"), {"cannot open", "No such file"});
  expect_read_error(dir_.string(), {"not a regular file"});
}

TEST_F(Idx, BadMagicShowsTheBytes) {
  expect_read_error(write_raw("magic", std::string("\x01\x02\x08\x01", 4) + be<uint32_t>({1}) + "x"),
                    {"bad magic", "01 02 08 01"});
  expect_read_error(write_gz("magic.gz", "hello world"), {"bad magic", "68 65 6c 6c"});
}

TEST_F(Idx, UnknownTypeCode) {
  expect_read_error(write_raw("type", idx_file(0x0A, {1}, "x")), {"unknown type code 0a", "08 uint8"});
}

TEST_F(Idx, TruncatedHeader) {
  expect_read_error(write_raw("short", std::string("\0\0", 2)), {"truncated header", "got 2"});
  expect_read_error(write_raw("dims", idx_file(0x08, {3, 4}, "").substr(0, 9)),
                    {"truncated header", "2 dims need 8 bytes, got 5"});
}

TEST_F(Idx, TruncatedData) {
  const std::string full = idx_file(0x0C, {3}, be<int32_t>({1, 2, 3}));
  expect_read_error(write_raw("raw", full.substr(0, full.size() - 5)),
                    {"truncated", "[3]", "int32", "need 12 bytes of data, got 7"});
  expect_read_error(write_gz("cut.gz", full.substr(0, full.size() - 5)),
                    {"truncated", "need 12 bytes of data, got 7"});
}

TEST_F(Idx, TruncatedGzipStream) {
  std::string data(50000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = char((i * 2654435761u) >> 13);  // barely compressible
  const std::string p = write_gz("stream.gz", idx_file(0x08, {50000}, data));
  const auto size = fs::file_size(p);
  fs::resize_file(p, size / 2);
  expect_read_error(p, {"gzip stream is truncated"});
  // Only the 8-byte gzip trailer (CRC and length) missing: all data arrives, the stream is still incomplete.
  const std::string q = write_gz("trailer.gz", idx_file(0x08, {4}, "abcd"));
  fs::resize_file(q, fs::file_size(q) - 8);
  expect_read_error(q, {"gzip stream is truncated"});
}

TEST_F(Idx, TrailingBytes) {
  const std::string full = idx_file(0x0B, {2}, be<int16_t>({1, 2})) + "zz";
  expect_read_error(write_raw("raw", full), {"trailing bytes after the 4 bytes of data", "[2]", "int16"});
  expect_read_error(write_gz("gz.gz", full), {"trailing bytes after the 4 bytes of data"});
}

TEST_F(Idx, AbsurdDims) {
  // 2^32-1 cubed does not fit in int64: rejected before any allocation, raw or gzip.
  const std::string huge = idx_file(0x0E, {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}, "");
  expect_read_error(write_raw("overflow", huge), {"too many elements"});
  expect_read_error(write_gz("overflow.gz", huge), {"too many elements"});
  // Empty (a dim of 0) yet the other dims overflow a stride (found by fuzz/idx): rejected, not UB.
  const std::string empty_huge = idx_file(0x08, {0, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}, "");
  expect_read_error(write_raw("empty_overflow", empty_huge), {"too many elements", "[0, 4294967295"});
  expect_read_error(write_gz("empty_overflow.gz", empty_huge), {"too many elements"});
  // Representable but far more than the file can hold (~64 GiB asked of a tiny file).
  const std::string big = idx_file(0x0E, {65536, 65536, 2}, "12345678");
  expect_read_error(write_raw("big", big), {"truncated", "need 68719476736 bytes of data, got 8"});
  expect_read_error(write_gz("big.gz", big), {"need 68719476736 bytes", "gzip file can hold"});
}

// ---- Fashion-MNIST ----

class FashionMnist : public Idx {
 protected:
  // Writes split files of n images (pixel = image + row + col, mod 256) and the given labels.
  void write_split(const std::string& prefix, int n, const std::vector<uint8_t>& labels, bool gz,
                   int side = 28) const {
    std::string pixels;
    for (int i = 0; i < n; ++i)
      for (int r = 0; r < side; ++r)
        for (int c = 0; c < side; ++c) pixels += char((i + r + c) & 0xFF);
    const uint32_t s = uint32_t(side);
    write(prefix + "-images-idx3-ubyte", idx_file(0x08, {uint32_t(n), s, s}, pixels), gz);
    write(prefix + "-labels-idx1-ubyte", idx_file(0x08, {uint32_t(labels.size())}, be(labels)), !gz);
  }
};

TEST_F(FashionMnist, LoadsGeneratedSplits) {
  write_split("train", 3, {9, 0, 4}, false);
  write_split("t10k", 2, {7, 1}, true);
  const ImageDataset train = load_fashion_mnist(dir_.string(), "train");
  EXPECT_EQ(train.images.dtype(), DType::UInt8);
  EXPECT_EQ(train.images.shape(), (Shape{3, 28, 28}));
  const auto px = train.images.to_vector<int>();
  for (int i = 0; i < 3; ++i)
    for (int r = 0; r < 28; ++r)
      for (int c = 0; c < 28; ++c) ASSERT_EQ(px[size_t((i * 28 + r) * 28 + c)], i + r + c);
  expect_tensor<int64_t>(train.labels, DType::Int64, {3}, {9, 0, 4}, "train labels");
  ASSERT_EQ(train.class_names.size(), 10u);
  EXPECT_EQ(train.class_names[0], "T-shirt/top");
  EXPECT_EQ(train.class_names[9], "Ankle boot");
  const ImageDataset test = load_fashion_mnist(dir_.string(), "test");
  EXPECT_EQ(test.images.shape(), (Shape{2, 28, 28}));
  expect_tensor<int64_t>(test.labels, DType::Int64, {2}, {7, 1}, "test labels");
}

TEST_F(FashionMnist, MissingFileListsNamesTried) {
  write_split("train", 2, {1, 2}, false);
  fs::remove(path("train-labels-idx1-ubyte.gz"));
  test::expect_error([&] { load_fashion_mnist(dir_.string(), "train"); },
                     {"no train labels file", dir_.string(),
                      "train-labels-idx1-ubyte and train-labels-idx1-ubyte.gz", "dataset-fashion-mnist",
                      "MOH_FASHION_MNIST"});
  test::expect_error([&] { load_fashion_mnist(dir_.string(), "test"); },
                     {"no test images file", "t10k-images-idx3-ubyte and t10k-images-idx3-ubyte.gz"});
}

TEST_F(FashionMnist, RejectsInconsistentFiles) {
  write_split("train", 3, {1, 2}, false);
  test::expect_error([&] { load_fashion_mnist(dir_.string(), "train"); }, {"has 3 images", "has 2 labels"});
  write_split("t10k", 2, {3, 12}, false);
  test::expect_error([&] { load_fashion_mnist(dir_.string(), "test"); },
                     {"t10k-labels-idx1-ubyte", "label 1 is 12", "expected 0..9"});
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  write_split("train", 2, {1, 2}, true, 27);
  test::expect_error([&] { load_fashion_mnist(dir_.string(), "train"); },
                     {"train-images-idx3-ubyte.gz", "uint8[2, 27, 27]", "expected uint8[N, 28, 28]"});
  test::expect_error([&] { load_fashion_mnist(dir_.string(), "val"); }, {"unknown split 'val'"});
}

TEST_F(FashionMnist, EnvironmentOverridesDefaultRoot) {
  const char* old = std::getenv("MOH_FASHION_MNIST");
  const std::string saved = old ? old : "";
  ::setenv("MOH_FASHION_MNIST", dir_.c_str(), 1);
  EXPECT_EQ(default_fashion_mnist_root(), dir_.string());
  ::setenv("MOH_FASHION_MNIST", "", 1);
  EXPECT_EQ(default_fashion_mnist_root(), "/usr/share/datasets/fashion-mnist");
  if (old) ::setenv("MOH_FASHION_MNIST", saved.c_str(), 1);
  else ::unsetenv("MOH_FASHION_MNIST");
}

// The real dataset: 6000 train and 1000 test images of each class.
TEST(FashionMnistReal, DebianPackageSplits) {
  const std::string root = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(root))
    GTEST_SKIP() << root << " not found (install the Debian package dataset-fashion-mnist)";
  for (const auto& [split, n] : {std::pair<std::string, int64_t>{"train", 60000}, {"test", 10000}}) {
    const ImageDataset d = load_fashion_mnist(root, split);
    EXPECT_EQ(d.images.shape(), (Shape{n, 28, 28})) << split;
    EXPECT_EQ(d.labels.shape(), (Shape{n})) << split;
    std::vector<int64_t> count(10, 0);
    const int64_t* l = d.labels.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) ++count[size_t(l[i])];
    for (int c = 0; c < 10; ++c) EXPECT_EQ(count[size_t(c)], n / 10) << split << " class " << c;
  }
}

}  // namespace
}  // namespace moh
