// Hdf5File: round trip of every dtype and layout under nested groups, listing, attributes of every
// kind, files written by other tools (raw C API: narrow and wide integers, big-endian floats,
// fixed-length strings), and every error path, each naming the file and the object.
#include <gtest/gtest.h>

#include <hdf5.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/factory.h"
#include "core/io/hdf5_file.h"
#include "core/ops.h"
#include "tests/test_util.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

class Hdf5FileTest : public test::TempDirTest {};

using test::expect_error;
using test::expect_same_bytes;

TEST_F(Hdf5FileTest, RoundTripsEveryDtypeAndLayoutUnderNestedGroups) {
  Tensor base = arange(-6.0, 6.0, 1.0, DType::Float64).view({3, 4});
  std::map<std::string, Tensor> tensors{
      {"/model/f32", mul(base, 0.37).to(DType::Float32)},
      {"model/f64", mul(base, 1.0 / 3.0)},
      {"/model/bf16", mul(base, 0.3).to(DType::BFloat16)},
      {"/model/f16", mul(base, 0.3).to(DType::Float16)},
      {"/model/i32", base.to(DType::Int32)},
      {"/model/i64", mul(base, 1e12).to(DType::Int64)},
      {"/model/u8", add(base, 6.0).to(DType::UInt8)},
      {"/model/bool", gt(base, 0.5)},
      {"/model/scalar", scalar_tensor(2.5, DType::Float64)},
      {"/model/empty", zeros({0, 3}, DType::Float32)},
      {"/model/transposed", mul(base, 0.5).to(DType::Float32).t()},
      {"/model/sliced", base.slice(1, 0, 4, 2).to(DType::Int64)},
      {"/model/broadcast", base.select(0, 1).unsqueeze(0).expand({5, 4})},
      {"/model/blocks.3.attn.qkv.weight", ones({2, 2})},
      {"/optimizer/fc1.weight/exp_avg", full({3}, 0.25)},
      {"/optimizer/fc1.weight/step", scalar_tensor(7, DType::Int64)},
      {"/optimizer/step", scalar_tensor(7, DType::Int64)},
  };
  const std::string p = path("all.h5");
  {
    Hdf5File f(p, Hdf5File::Mode::Create);
    for (const auto& [name, t] : tensors) f.write_tensor(name, t);
    f.close();
    f.close();  // idempotent
  }
  Hdf5File f(p, Hdf5File::Mode::Read);
  for (const auto& [name, t] : tensors) {
    expect_same_bytes(f.read_tensor(name), t, name);
    EXPECT_EQ(f.dataset_shape(name), t.shape()) << name;
    EXPECT_EQ(f.dataset_dtype(name), t.dtype()) << name;
  }
  EXPECT_EQ(f.datasets("/model").size(), 14u);
  EXPECT_EQ(f.datasets("model").front(), "bf16");
  EXPECT_EQ(f.datasets("/optimizer"), std::vector<std::string>{"step"});
  EXPECT_EQ(f.datasets("/optimizer", true),
            (std::vector<std::string>{"fc1.weight/exp_avg", "fc1.weight/step", "step"}));
  EXPECT_EQ(f.groups("/"), (std::vector<std::string>{"model", "optimizer"}));
  EXPECT_EQ(f.groups("/optimizer"), std::vector<std::string>{"fc1.weight"});
  EXPECT_TRUE(f.datasets("/").empty());
  EXPECT_TRUE(f.exists("/optimizer/fc1.weight/"));
  EXPECT_TRUE(f.is_group("optimizer/fc1.weight"));
  EXPECT_TRUE(f.exists("/model/f32"));
  EXPECT_FALSE(f.is_group("/model/f32"));
  EXPECT_FALSE(f.exists("/model/nope"));
  EXPECT_FALSE(f.exists("/nope/deeper/still"));
  EXPECT_FALSE(f.exists("/model/f32/below_a_dataset"));
  // bfloat16 carries its dtype; nothing else needs one.
  EXPECT_EQ(f.attr_string("/model/bf16", "dtype"), "bfloat16");
  EXPECT_FALSE(f.has_attr("/model/f16", "dtype"));
  f.close();
  EXPECT_FALSE(f.is_open());
}

TEST_F(Hdf5FileTest, AttributesOfEveryKindOnRootGroupsAndDatasets) {
  const std::string p = path("attrs.h5");
  const std::string text = "model:\n  dim: 64  # ünïcode\n\ttabs and 'quotes'\n";
  {
    Hdf5File f(p, Hdf5File::Mode::Create);
    f.set_attr_int("/", "step", -42);
    f.set_attr_uint("/rng/dropout", "seed", std::numeric_limits<uint64_t>::max());  // creates the groups
    f.set_attr_double("scheduler", "lr", 3e-4);
    f.set_attr_string("/", "config", text);
    f.set_attr_string("/", "empty", "");
    f.write_tensor("/model/w", ones({2}));
    f.set_attr_int("/model/w", "tag", 5);
    f.set_attr_int("/", "replaced", 1);
    f.set_attr_string("/", "replaced", "now a string");  // replacing may change the type
    f.create_group("/data");
    f.create_group("/data");  // no-op when present
    f.set_attr_int("/data", "index", int64_t(1) << 40);
  }
  Hdf5File f(p, Hdf5File::Mode::ReadWrite);
  EXPECT_EQ(f.attr_int("/", "step"), -42);
  EXPECT_EQ(f.attr_uint("/rng/dropout", "seed"), std::numeric_limits<uint64_t>::max());
  EXPECT_TRUE(f.is_group("/rng"));
  EXPECT_EQ(f.attr_double("/scheduler", "lr"), 3e-4);
  EXPECT_EQ(f.attr_string("", "config"), text);
  EXPECT_EQ(f.attr_string("/", "empty"), "");
  EXPECT_EQ(f.attr_int("/model/w", "tag"), 5);
  EXPECT_EQ(f.attr_string("/", "replaced"), "now a string");
  EXPECT_EQ(f.attr_int("/data", "index"), int64_t(1) << 40);
  EXPECT_EQ(f.attr_uint("/data", "index"), uint64_t(1) << 40);
  EXPECT_EQ(f.attr_names("/"), (std::vector<std::string>{"config", "empty", "replaced", "step"}));
  EXPECT_TRUE(f.has_attr("/", "step"));
  EXPECT_FALSE(f.has_attr("/", "nope"));
  EXPECT_TRUE(f.attr_names("/data/").size() == 1);

  expect_error([&] { f.attr_int("/", "nope"); }, {p, "object '/'", "no attribute 'nope'"});
  expect_error([&] { f.attr_int("/", "config"); }, {p, "attribute 'config' is not an integer"});
  expect_error([&] { f.attr_double("/", "step"); }, {"attribute 'step' is not a float"});
  expect_error([&] { f.attr_string("/", "step"); }, {"attribute 'step' is not a string"});
  expect_error([&] { f.attr_int("/rng/dropout", "seed"); }, {"18446744073709551615 does not fit int64"});
  expect_error([&] { f.attr_uint("/", "step"); }, {"-42 is negative"});
  expect_error([&] { f.attr_int("/missing", "step"); }, {p, "object '/missing'", "no such group or dataset"});
  expect_error([&] { f.set_attr_string("/", "nul", std::string("a\0b", 3)); }, {"NUL"});
  expect_error([&] { f.set_attr_int("/", "", 1); }, {"empty attribute name"});
}

// Files from other writers (h5py, older tools): the reader widens narrow integers, converts
// big-endian floats, and reads fixed-length strings.
TEST_F(Hdf5FileTest, ReadsTypesWrittenByOtherTools) {
  const std::string p = path("foreign.h5");
  {
    hid_t file = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    auto put = [&](const char* name, hid_t type, const void* data, hsize_t n) {
      hid_t space = H5Screate_simple(1, &n, nullptr);
      hid_t d = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      ASSERT_GE(d, 0) << name;
      ASSERT_GE(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), 0) << name;
      H5Dclose(d);
      H5Sclose(space);
    };
    const int16_t i16[3] = {-3, 0, 32767};
    const uint16_t u16[2] = {1, 65535};
    const uint32_t u32[2] = {7, 4000000000u};
    const uint64_t u64[1] = {1};
    const int8_t i8[2] = {-128, 127};
    put("i16", H5T_NATIVE_INT16, i16, 3);
    put("u16", H5T_NATIVE_UINT16, u16, 2);
    put("u32", H5T_NATIVE_UINT32, u32, 2);
    put("u64", H5T_NATIVE_UINT64, u64, 1);
    put("i8", H5T_NATIVE_INT8, i8, 2);
    // A big-endian float64 dataset, written from native doubles (HDF5 swaps the bytes).
    const double f64[2] = {1.5, -2.25};
    hsize_t n = 2;
    hid_t space = H5Screate_simple(1, &n, nullptr);
    hid_t d = H5Dcreate2(file, "f64be", H5T_IEEE_F64BE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, f64);
    // A fixed-length, NUL-padded string attribute and a mislabelled dtype attribute.
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, 8);
    hid_t scalar = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(d, "dtype", str, scalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, str, "float32\0");
    H5Aclose(a);
    a = H5Acreate2(file, "name", str, scalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, str, "abc\0\0\0\0\0");
    H5Aclose(a);
    H5Tclose(str);
    H5Sclose(scalar);
    H5Dclose(d);
    H5Sclose(space);
    H5Fclose(file);
  }
  Hdf5File f(p, Hdf5File::Mode::Read);
  EXPECT_EQ(f.read_tensor("i16").dtype(), DType::Int32);
  EXPECT_EQ(f.read_tensor("i16").to_vector<int64_t>(), (std::vector<int64_t>{-3, 0, 32767}));
  EXPECT_EQ(f.read_tensor("u16").to_vector<int64_t>(), (std::vector<int64_t>{1, 65535}));
  EXPECT_EQ(f.read_tensor("u32").dtype(), DType::Int64);
  EXPECT_EQ(f.read_tensor("u32").to_vector<int64_t>(), (std::vector<int64_t>{7, 4000000000}));
  EXPECT_EQ(f.read_tensor("i8").to_vector<int64_t>(), (std::vector<int64_t>{-128, 127}));
  EXPECT_EQ(f.attr_string("/", "name"), "abc");
  expect_error([&] { f.read_tensor("u64"); }, {p, "dataset '/u64'", "unsigned 64-bit"});
  expect_error([&] { f.read_tensor("f64be"); }, {"dtype attribute says 'float32'", "float64"});
}

TEST_F(Hdf5FileTest, ErrorsNameTheFileAndObject) {
  const std::string p = path("errors.h5");
  expect_error([&] { Hdf5File(path("missing.h5"), Hdf5File::Mode::Read); }, {"missing.h5", "no such file"});
  expect_error([&] { Hdf5File(path("no_dir/x.h5"), Hdf5File::Mode::Create); },
               {"no_dir/x.h5", "cannot create", "No such file or directory"});
  { std::ofstream(path("text.h5")) << "this is not an HDF5 file, just some text that is long enough"; }
  expect_error([&] { Hdf5File(path("text.h5"), Hdf5File::Mode::Read); },
               {"text.h5", "cannot open as HDF5", "signature"});
  {
    Hdf5File f(p, Hdf5File::Mode::Create);
    f.write_tensor("/a/w", ones({2}));
    expect_error([&] { f.write_tensor("/a/w", ones({2})); }, {p, "dataset '/a/w'", "already exists"});
    expect_error([&] { f.write_tensor("/a", ones({2})); }, {"dataset '/a'", "already exists"});
    expect_error([&] { f.write_tensor("/", ones({2})); }, {"root is a group"});
    expect_error([&] { f.write_tensor("/a/w/x", ones({2})); }, {"dataset '/a/w/x'", "parent '/a/w' is a dataset"});
    expect_error([&] { f.write_tensor("/b", Tensor()); }, {"dataset '/b'", "undefined"});
    expect_error([&] { f.write_tensor("/a//b", ones({1})); }, {"invalid object path '/a//b'"});
    expect_error([&] { f.write_tensor("/a/../b", ones({1})); }, {"invalid object path"});
    expect_error([&] { f.create_group("/a/w"); }, {"group '/a/w'", "a dataset already has this name"});
    expect_error([&] { f.set_attr_int("/a/w/g", "x", 1); }, {"object '/a/w/g'", "parent '/a/w' is a dataset"});
    expect_error([&] { f.read_tensor("/a/nope"); }, {p, "dataset '/a/nope'", "no such dataset"});
    expect_error([&] { f.read_tensor("/a"); }, {"dataset '/a'", "no such dataset"});
    expect_error([&] { f.datasets("/a/w"); }, {"group '/a/w'", "no such group"});
    expect_error([&] { f.groups("/zz"); }, {"group '/zz'", "no such group"});
    Hdf5File moved(std::move(f));
    EXPECT_FALSE(f.is_open());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
    expect_error([&] { f.read_tensor("/a/w"); }, {"dataset '/a/w'", "the file is closed"});
    EXPECT_EQ(moved.read_tensor("/a/w").to_vector<float>(), (std::vector<float>{1, 1}));
    moved.close();
    expect_error([&] { moved.exists("/a"); }, {"the file is closed"});
  }
  Hdf5File f(p, Hdf5File::Mode::Read);
  expect_error([&] { f.write_tensor("/c", ones({1})); }, {p, "dataset '/c'", "read-only"});
  expect_error([&] { f.set_attr_int("/", "x", 1); }, {"object '/'", "read-only"});
  expect_error([&] { f.create_group("/g"); }, {"group '/g'", "read-only"});
}

TEST_F(Hdf5FileTest, WritesAndReadsRowRangesOfPresizedDatasets) {
  const std::string p = path("rows.h5");
  const Tensor all = test::rand_t({7, 2, 3}, 11);
  const Tensor flags = gt(test::rand_t({7}, 12), 0.0);
  {
    Hdf5File f(p, Hdf5File::Mode::Create);
    f.create_dataset("/d/x", DType::Float32, {7, 2, 3});
    f.create_dataset("flags", DType::Bool, {7});
    f.create_dataset("bf", DType::BFloat16, {2});
    // Out of order and in uneven blocks, as a streaming writer may.
    f.write_rows("/d/x", 4, all.narrow(0, 4, 3));
    f.write_rows("/d/x", 0, all.narrow(0, 0, 1));
    f.write_rows("/d/x", 1, all.narrow(0, 1, 3).t().contiguous().t());  // a non-contiguous view of rows 1..3
    f.write_rows("flags", 0, flags);
    f.write_rows("bf", 0, ones({2}, DType::BFloat16));
    f.write_rows("/d/x", 7, zeros({0, 2, 3}));
    EXPECT_EQ(f.dataset_shape("/d/x"), (Shape{7, 2, 3}));
  }
  Hdf5File f(p, Hdf5File::Mode::Read);
  expect_same_bytes(f.read_tensor("/d/x"), all, "whole");
  expect_same_bytes(f.read_rows("/d/x", 2, 4), all.narrow(0, 2, 4), "rows 2..5");
  expect_same_bytes(f.read_rows("/d/x", 7, 0), zeros({0, 2, 3}), "no rows");
  expect_same_bytes(f.read_rows("flags", 3, 2), flags.narrow(0, 3, 2), "bool rows");
  expect_same_bytes(f.read_rows("bf", 0, 2), ones({2}, DType::BFloat16), "bfloat16 rows");
}

TEST_F(Hdf5FileTest, RowRangeErrorsNameTheDatasetAndTheRows) {
  const std::string p = path("rows.h5");
  Hdf5File f(p, Hdf5File::Mode::Create);
  f.create_dataset("x", DType::Float32, {4, 3});
  f.write_tensor("s", scalar_tensor(1.0));
  expect_error([&] { f.create_dataset("x", DType::Float32, {4, 3}); }, {p, "dataset '/x'", "already exists"});
  expect_error([&] { f.create_dataset("y", DType::Float32, {}); }, {"dataset '/y'", "rank >= 1"});
  expect_error([&] { f.create_dataset("y", DType::Float32, {2, -1}); }, {"dataset '/y'", "negative dimension"});
  expect_error([&] { f.write_rows("x", 3, zeros({2, 3})); }, {p, "dataset '/x'", "rows [3, 5) are outside its 4 rows"});
  expect_error([&] { f.write_rows("x", -1, zeros({1, 3})); }, {"rows [-1, 0) are outside"});
  expect_error([&] { f.write_rows("x", 0, zeros({2, 4})); }, {"dataset '/x'", "got shape [2, 4], expected [k] + [3]"});
  expect_error([&] { f.write_rows("x", 0, zeros({2, 3}, DType::Float64)); }, {"got float64, the dataset holds float32"});
  expect_error([&] { f.write_rows("nope", 0, zeros({2, 3})); }, {"dataset '/nope'", "no such dataset"});
  expect_error([&] { f.read_rows("x", 2, 3); }, {"dataset '/x'", "rows [2, 5) are outside its 4 rows"});
  expect_error([&] { f.read_rows("s", 0, 1); }, {"dataset '/s'", "is a scalar"});
  f.close();
  Hdf5File r(p, Hdf5File::Mode::Read);
  expect_error([&] { r.write_rows("x", 0, zeros({1, 3})); }, {"dataset '/x'", "read-only"});
  expect_error([&] { r.create_dataset("z", DType::Float32, {1}); }, {"dataset '/z'", "read-only"});
}

}  // namespace
}  // namespace moh
