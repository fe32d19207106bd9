// Helpers any test suite may use: a fixture giving each test its own temporary folder, seeded
// random tensors and indices, a byte-exact tensor comparison, and an error check that looks for
// phrases in the message.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/factory.h"
#include "core/random.h"
#include "core/tensor.h"

namespace moh::test {

// Each test gets dir_ = <tmp>/moh_<suite>_<test>_<pid>, created empty and removed afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string id = std::string(info->test_suite_name()) + "_" + info->name();
    std::replace(id.begin(), id.end(), '/', '_');  // parameterized tests have '/' in their names
    dir_ = std::filesystem::temp_directory_path() / ("moh_" + id + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Writes `text` to dir_/name (creating sub-folders) and returns the path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::filesystem::path p = dir_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }

  std::filesystem::path dir_;
};

// Uniform values in [-1, 1) from a Philox generator seeded with `seed`.
inline Tensor rand_t(const Shape& shape, uint64_t seed, DType dtype = DType::Float32) {
  Generator gen(seed);
  return uniform(shape, -1.0, 1.0, gen, dtype);
}

// int64 indices in [0, limit), reproducible for a seed.
inline Tensor rand_index(const Shape& shape, int64_t limit, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& e : v) e = int64_t(rng() % uint32_t(limit));
  return from_vector<int64_t>(v, shape);
}

// a is contiguous and holds exactly the bytes of b (same dtype and shape).
inline void expect_same_bytes(const Tensor& a, const Tensor& b, const std::string& name) {
  ASSERT_TRUE(a.defined()) << name;
  EXPECT_EQ(a.dtype(), b.dtype()) << name;
  EXPECT_EQ(a.shape(), b.shape()) << name;
  EXPECT_TRUE(a.is_contiguous()) << name;
  Tensor bc = b.contiguous();
  ASSERT_EQ(a.nbytes(), bc.nbytes()) << name;
  EXPECT_EQ(std::memcmp(a.raw_data(), bc.raw_data(), a.nbytes()), 0) << name;
}

// fn must throw an exception of type E (moh::Error by default) whose message holds every part.
template <class E = Error>
void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown; expected one mentioning '" << parts.front() << "'";
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const auto& part : parts) EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' not in: " << msg;
  }
}

}  // namespace moh::test
