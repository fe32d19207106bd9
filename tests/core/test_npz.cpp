// .npz archives (core/io/npz.h): our round trip of every dtype, NumPy's own archives (committed fixtures from
// tests/reference/make_npz_fixtures.py: np.savez stored, np.savez_compressed deflated), NumPy reading ours and
// writing fresh ones when /usr/bin/python3 has numpy (skipped otherwise), and the corrupt-archive errors:
// no end record, CRC mismatch, a member that is not .npy, an unsupported method, encryption, a directory past
// the end, corrupt deflate data and a size deflate could not reach.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/factory.h"
#include "core/io/npz.h"
#include "core/ops.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace moh {
namespace {

class NpzTest : public test::TempDirTest {
 protected:
  static std::string read_all(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string write_bytes(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  static bool have_numpy() { return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0; }
  // Runs a Python program (with numpy imported as np); true when it exits 0.
  bool python(const std::string& program) const {
    const std::string script = write_bytes("check.py", "import numpy as np, zipfile, sys\n" + program);
    return std::system(("/usr/bin/python3 " + script).c_str()) == 0;
  }
  // The arrays of tests/reference/make_npz_fixtures.py.
  static void expect_fixture_arrays(const std::map<std::string, Tensor>& a, const std::string& what) {
    ASSERT_EQ(a.size(), 4u) << what;
    EXPECT_EQ(a.at("arr_0").dtype(), DType::UInt8) << what;
    EXPECT_EQ(a.at("arr_0").shape(), (Shape{2, 2, 2, 3})) << what;
    EXPECT_EQ(a.at("arr_0").to_vector<int64_t>(), arange(24).to_vector<int64_t>()) << what;
    EXPECT_EQ(a.at("mu").to_vector<double>(), (std::vector<double>{-1.0, -0.5, 0.0, 0.5, 1.0})) << what;
    EXPECT_EQ(a.at("sigma").shape(), (Shape{3, 3})) << what;
    EXPECT_EQ(a.at("sigma").to_vector<double>(), (std::vector<double>{0.5, 0, 0, 0, 0.5, 0, 0, 0, 0.5})) << what;
    EXPECT_EQ(a.at("labels").to_vector<int64_t>(), (std::vector<int64_t>{3, 1, 4})) << what;
  }
};

using test::expect_error;
using test::expect_same_bytes;

std::map<std::string, Tensor> sample_arrays() {
  const Tensor base = arange(-6.0, 6.0, 1.0, DType::Float64);
  return {{"f32", mul(base, 0.37).to(DType::Float32).view({3, 4})},
          {"f64", base.view({2, 6})},
          {"f16", base.to(DType::Float16)},
          {"i32", base.to(DType::Int32)},
          {"i64", mul(base, 1e12).to(DType::Int64)},
          {"u8", add(base, 6.0).to(DType::UInt8).view({1, 2, 2, 3})},
          {"bool", gt(base, 0.5)},
          {"scalar", scalar_tensor(7, DType::Int64)},
          {"empty", zeros({0})}};
}

TEST_F(NpzTest, RoundTripsEveryDtype) {
  const auto arrays = sample_arrays();
  save_npz(path("a.npz"), arrays);
  EXPECT_FALSE(std::filesystem::exists(path("a.npz.tmp")));
  const auto back = load_npz(path("a.npz"));
  ASSERT_EQ(back.size(), arrays.size());
  for (const auto& [key, t] : arrays) expect_same_bytes(back.at(key), t, key);
  save_npz(path("none.npz"), {});
  EXPECT_TRUE(load_npz(path("none.npz")).empty());
}

TEST_F(NpzTest, ReadsNumPysStoredAndDeflatedArchives) {
  const std::string dir = MOH_TEST_PATH(MOH_FIXTURE_DIR);
  expect_fixture_arrays(load_npz(dir + "/numpy_savez.npz"), "np.savez");
  expect_fixture_arrays(load_npz(dir + "/numpy_savez_compressed.npz"), "np.savez_compressed");
}

TEST_F(NpzTest, NumPyReadsOursAndWeReadFreshNumPyArchives) {
  if (!have_numpy()) GTEST_SKIP() << "/usr/bin/python3 has no numpy (apt-get install python3-numpy)";
  save_npz(path("ours.npz"), {{"arr_0", arange(24).to(DType::UInt8).view({2, 2, 2, 3})},
                              {"mu", from_vector<double>({0.25, -1.5}, {2})},
                              {"flags", from_vector<int64_t>({0, 1, 1}, {3}).to(DType::Bool)}});
  EXPECT_TRUE(
      python("path = sys.argv[0].replace('check.py', 'ours.npz')\n"
             "assert zipfile.ZipFile(path).testzip() is None  # every CRC-32 checks\n"
             "d = np.load(path)\n"
             "assert sorted(d.files) == ['arr_0', 'flags', 'mu'], d.files\n"
             "assert d['arr_0'].dtype == np.uint8 and (d['arr_0'] == np.arange(24).reshape(2, 2, 2, 3)).all()\n"
             "assert d['mu'].dtype == np.float64 and list(d['mu']) == [0.25, -1.5]\n"
             "assert d['flags'].dtype == np.bool_ and list(d['flags']) == [False, True, True]\n"));
  ASSERT_TRUE(python(
      "base = sys.argv[0].replace('check.py', '')\n"
      "a = {'x': np.arange(12, dtype=np.float32).reshape(3, 4), 'y': np.asfortranarray(np.arange(6).reshape(2, 3)),\n"
      "     'z': np.array([1.5, 2.5], dtype='>f8')}\n"
      "np.savez(base + 'stored.npz', **a)\n"
      "np.savez_compressed(base + 'deflated.npz', **a)\n"));
  for (const char* name : {"stored.npz", "deflated.npz"}) {
    const auto a = load_npz(path(name));
    EXPECT_EQ(a.at("x").to_vector<float>(), arange(12).to(DType::Float32).to_vector<float>()) << name;
    EXPECT_EQ(a.at("y").to_vector<int64_t>(), arange(6).to_vector<int64_t>()) << name;
    EXPECT_EQ(a.at("z").to_vector<double>(), (std::vector<double>{1.5, 2.5})) << name;
  }
}

TEST_F(NpzTest, RejectsCorruptArchivesNamingFileAndMember) {
  const std::string dir = MOH_TEST_PATH(MOH_FIXTURE_DIR);
  const std::string stored = read_all(dir + "/numpy_savez.npz");
  const std::string deflated = read_all(dir + "/numpy_savez_compressed.npz");
  ASSERT_FALSE(stored.empty());
  const size_t first_data = stored.find("\x93NUMPY");  // the first member's .npy image
  const size_t central = stored.find("PK\x01\x02");
  const size_t end = stored.find("PK\x05\x06");
  ASSERT_NE(central, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  const std::string first_name = stored.substr(30, stored[26]);  // the first local header's name
  auto patched = [](std::string s, size_t at, const std::string& bytes) { return s.replace(at, bytes.size(), bytes); };
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases{
      {"just text", {"not a zip archive"}},
      {stored.substr(0, end), {"no end of central directory record"}},
      {patched(stored, first_data + 70, "\x7f"), {"member '" + first_name + "'", "CRC-32 mismatch"}},
      {patched(stored, central + 46 + first_name.size() - 4, ".txt"), {".txt' is not a .npy array"}},
      {patched(stored, central + 10, "\x0c"), {"compression method 12 is not supported"}},
      {patched(stored, central + 8, "\x01"), {"is encrypted"}},
      {patched(stored, end + 16, "\xff\xff\xff\x00"), {"runs past the end of the file"}},
      {patched(stored, central + 42, "\x05"), {"no local file header at offset 5"}},
      {patched(deflated, deflated.find("PK\x01\x02") + 24, "\xff\xff\xff\x00"), {"more than deflate can expand"}},
      {patched(deflated, 30 + size_t(deflated[26]) + size_t(deflated[28]), "\xff\xff\xff\xff"),
       {"corrupt deflate data"}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string file = write_bytes("bad" + std::to_string(i) + ".npz", cases[i].first);
    std::vector<std::string> parts = cases[i].second;
    parts.push_back(file);
    expect_error([&] { load_npz(file); }, parts);
  }
  expect_error([&] { load_npz(path("missing.npz")); }, {path("missing.npz"), "cannot open"});
}

// Manual (about 13 GB of disk and memory traffic, 9 GB peak memory): run with --gtest_also_run_disabled_tests.
// A member past 4 GiB and one after it at an offset past 4 GiB need every zip64 record: local and central
// extra fields, the zip64 end record and its locator. Python's zipfile checks the structure and the CRC-32s.
TEST_F(NpzTest, DISABLED_Zip64ArchivesPastFourGiBReadInPythonAndBack) {
  if (!have_numpy()) GTEST_SKIP() << "/usr/bin/python3 has no numpy (apt-get install python3-numpy)";
  const int64_t big = (int64_t(1) << 32) + 1000;
  {
    Tensor samples = zeros({big}, DType::UInt8);
    samples.data<uint8_t>()[big - 1] = 7;
    save_npz(path("big.npz"), {{"a_big", samples}, {"b_after", from_vector<int64_t>({5, 6}, {2})}});
  }
  EXPECT_TRUE(
      python("path = sys.argv[0].replace('check.py', 'big.npz')\n"
             "z = zipfile.ZipFile(path)\n"
             "assert z.testzip() is None\n"
             "info = {i.filename: i for i in z.infolist()}\n"
             "assert info['a_big.npy'].file_size == 128 + (1 << 32) + 1000, info['a_big.npy'].file_size\n"
             "assert info['b_after.npy'].header_offset > (1 << 32)\n"
             "assert list(np.load(path)['b_after']) == [5, 6]\n"));
  const auto back = load_npz(path("big.npz"));
  EXPECT_EQ(back.at("a_big").numel(), big);
  EXPECT_EQ(back.at("a_big").data<uint8_t>()[big - 1], 7);
  EXPECT_EQ(back.at("b_after").to_vector<int64_t>(), (std::vector<int64_t>{5, 6}));
}

TEST_F(NpzTest, RefusesBadKeysAndLeavesNoFile) {
  expect_error([&] { save_npz(path("a.npz"), {{"a/b", zeros({1})}}); }, {path("a.npz"), "invalid key 'a/b'"});
  expect_error([&] { save_npz(path("a.npz"), {{"x", zeros({1}, DType::BFloat16)}}); }, {"array 'x'", "bfloat16"});
  EXPECT_FALSE(std::filesystem::exists(path("a.npz")));
  EXPECT_FALSE(std::filesystem::exists(path("a.npz.tmp")));
}

}  // namespace
}  // namespace moh
