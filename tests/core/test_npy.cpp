// .npy files (core/io/npy.h): round trips of every dtype and rank, files as NumPy writes them (v1/v2/v3,
// Fortran order, big-endian, '=' and '|' byte orders, Python 2 longs), and every header error class (bad magic,
// bad version, unknown descr, malformed or incomplete dicts, truncated and trailing data, header length past
// the file or the limit), each naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/factory.h"
#include "core/io/npy.h"
#include "core/ops.h"
#include "tests/test_util.h"

namespace moh {
namespace {

class NpyTest : public test::TempDirTest {
 protected:
  // A .npy image with this header dict (padded and newline-ended as NumPy does) and data.
  static std::string npy(const std::string& dict, const std::string& data, int major = 1) {
    std::string header = dict;
    const size_t preamble = major == 1 ? 10 : 12;
    header.append((64 - (preamble + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::string out = "\x93NUMPY";
    out += char(major);
    out += '\0';
    for (size_t i = 0; i < preamble - 8; ++i) out += char((header.size() >> (8 * i)) & 0xff);
    return out + header + data;
  }
  std::string write_bytes(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  static std::string bytes_of(const std::vector<float>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  }
};

using test::expect_error;
using test::expect_same_bytes;

TEST_F(NpyTest, RoundTripsEveryDtypeAndRank) {
  const Tensor base = arange(-6.0, 6.0, 1.0, DType::Float64);
  const std::map<std::string, Tensor> tensors{
      {"f32", mul(base, 0.37).to(DType::Float32).view({3, 4})},
      {"f64", mul(base, 1.0 / 3.0).view({2, 3, 2})},
      {"f16", mul(base, 0.3).to(DType::Float16).view({12})},
      {"i32", base.to(DType::Int32).view({4, 3})},
      {"i64", mul(base, 1e12).to(DType::Int64).view({1, 12})},
      {"u8", add(base, 6.0).to(DType::UInt8).view({2, 2, 3})},
      {"bool", gt(base, 0.5).view({6, 2})},
      {"scalar", scalar_tensor(2.5, DType::Float64)},
      {"empty", zeros({0, 3})},
      {"strided", mul(base, 2.0).to(DType::Float32).view({3, 4}).t()},
  };
  for (const auto& [name, t] : tensors) {
    save_npy(path(name + ".npy"), t);
    expect_same_bytes(load_npy(path(name + ".npy")), t, name);
    EXPECT_EQ(read_npy_header(path(name + ".npy")).shape, t.shape()) << name;
  }
  EXPECT_FALSE(std::filesystem::exists(path("f32.npy.tmp")));
}

TEST_F(NpyTest, WritesNumPysHeaderLayout) {
  save_npy(path("a.npy"), zeros({2, 3}));
  std::ifstream in(path("a.npy"), std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  const std::string bytes = s.str();
  ASSERT_EQ(bytes.size(), 128u + 24);  // header padded to 64-byte alignment
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(bytes.substr(10, 59), "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  EXPECT_EQ(bytes[127], '\n');
  save_npy(path("b.npy"), zeros({5}, DType::Bool));
  expect_same_bytes(
      parse_npy(npy("{'descr': '|b1', 'fortran_order': False, 'shape': (5,), }", std::string(5, '\0')), "x"),
      load_npy(path("b.npy")), "bool (5,)");
}

TEST_F(NpyTest, WritesVersion2WhenTheHeaderPasses64KiB) {
  Shape shape(25000, 1);  // "1, " * 25000: a 75 kB header
  save_npy(path("wide.npy"), zeros(shape, DType::UInt8));
  std::ifstream in(path("wide.npy"), std::ios::binary);
  char preamble[8];
  in.read(preamble, 8);
  EXPECT_EQ(preamble[6], 2);
  EXPECT_EQ(load_npy(path("wide.npy")).shape(), shape);
}

TEST_F(NpyTest, ReadsVersions2And3ByteOrdersAndPython2Longs) {
  const std::string data = bytes_of({1.5f, -2.0f, 3.25f});
  for (int major : {1, 2, 3})
    for (const char* descr : {"<f4", "=f4", "|f4"}) {
      const Tensor t = parse_npy(
          npy(std::string("{\"descr\": \"") + descr + "\", \"fortran_order\": False, \"shape\": (3L,)}", data, major),
          "mem");
      EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1.5f, -2.0f, 3.25f})) << major << " " << descr;
    }
}

TEST_F(NpyTest, ByteSwapsBigEndianData) {
  const std::string be_f4("\x3f\xc0\x00\x00\xc0\x00\x00\x00", 8);  // 1.5, -2.0
  EXPECT_EQ(parse_npy(npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", be_f4), "m").to_vector<float>(),
            (std::vector<float>{1.5f, -2.0f}));
  const std::string be_i8("\x00\x00\x00\x00\x00\x00\x01\x02", 8);
  EXPECT_EQ(parse_npy(npy("{'descr': '>i8', 'fortran_order': False, 'shape': (), }", be_i8), "m").item<int64_t>(), 258);
}

TEST_F(NpyTest, TransposesFortranOrderIntoCOrder) {
  // np.asfortranarray([[0, 1, 2], [3, 4, 5]]) stores the columns: 0 3 1 4 2 5.
  const std::vector<int32_t> columns{0, 3, 1, 4, 2, 5};
  const std::string data(reinterpret_cast<const char*>(columns.data()), 24);
  const std::string file =
      write_bytes("f.npy", npy("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", data));
  const Tensor t = load_npy(file);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
}

TEST_F(NpyTest, RejectsEveryHeaderErrorNamingTheFile) {
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string data = bytes_of({1, 2});
  const std::vector<std::pair<std::string, std::string>> cases{
      {"\x89PNG\r\n\x1a\n" + std::string(64, ' '), "no \\x93NUMPY magic"},
      {npy(ok, data).substr(0, 6), "no \\x93NUMPY magic"},
      {npy(ok, data, 4), "unsupported .npy version 4.0"},
      {npy(ok, data).replace(7, 1, "\x01", 1), "unsupported .npy version 1.1"},
      {npy("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", data), "unsupported descr '<c8'"},
      {npy("{'descr': '<u4', 'fortran_order': False, 'shape': (2,), }", data), "unsupported descr '<u4'"},
      {npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", data), "structured dtypes"},
      {npy("{'descr': '<f4', 'fortran_order': False, }", data), "lacks 'shape'"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", data), "unknown header key 'extra'"},
      {npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", data), "appears twice"},
      {npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", data), "not True or False"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", data), "is an integer, not a tuple"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", data), "non-integer"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", data), "overflows int64"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", data), "too large"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x", data), "unexpected text"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), ", data), "malformed header"},
      {npy(ok, data).replace(127, 1, " "), "does not end with a newline"},
      {npy(ok, data.substr(0, 7)), "truncated: expected 8 data bytes for float32 shape [2], the file holds 7"},
      {npy(ok, data + "x"), "trailing bytes: expected 8 data bytes for float32 shape [2], the file holds 9"},
      {npy(ok, data).replace(8, 2, "\xff\xff", 2), "header claims 65545 bytes"},
      {npy(ok, data, 2).replace(8, 4, "\x00\x00\x00\x7f", 4), "exceeds the limit of 1048576 bytes"},
      {npy("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", "\x01\x02"), "bool element 1 has byte value 2"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& bytes = cases[i].first;  // not structured bindings: clang 14 cannot capture those
    const auto& message = cases[i].second;
    const std::string file = write_bytes("bad" + std::to_string(i) + ".npy", bytes);
    expect_error([&] { load_npy(file); }, {file, message});
    expect_error([&] { parse_npy(bytes, "buffer " + std::to_string(i)); }, {"buffer " + std::to_string(i), message});
  }
  expect_error([&] { load_npy(path("missing.npy")); }, {path("missing.npy"), "cannot open"});
}

TEST_F(NpyTest, RefusesBfloat16AndLeavesNoFileOnFailure) {
  expect_error([&] { save_npy(path("b.npy"), zeros({2}, DType::BFloat16)); },
               {path("b.npy"), "bfloat16 has no NumPy dtype"});
  EXPECT_FALSE(std::filesystem::exists(path("b.npy")));
  EXPECT_FALSE(std::filesystem::exists(path("b.npy.tmp")));
  expect_error([&] { save_npy(path("no/such/dir/a.npy"), zeros({2})); }, {"no/such/dir/a.npy"});
}

}  // namespace
}  // namespace moh
