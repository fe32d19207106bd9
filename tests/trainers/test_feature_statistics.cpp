// Feature statistics: streaming uneven batches equals one batch equals a two-pass float64 computation
// here; float32, strided and empty batches; a large common offset keeps its accuracy; the accumulator's
// errors; the .npz file round trip (bit-exact, readable as plain members) and the loader's checks, each
// error naming the file and the key.
#include <gtest/gtest.h>

#include <cmath>

#include "core/factory.h"
#include "core/io/npz.h"
#include "tests/test_util.h"
#include "tests/trainers/dense_matrix_test_util.h"
#include "trainers/feature_statistics.h"

namespace moh {
namespace {

using dense_test::Matrix;
using dense_test::max_abs_difference;

// Rows of `features` [n, d] in float64: the mean, then the covariance of the deviations over n - 1.
FeatureStats two_pass_stats(const Matrix& features, int64_t n, int64_t d) {
  FeatureStats s{n, Matrix(size_t(d), 0.0), Matrix(size_t(d * d), 0.0)};
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < d; ++j) s.mu[j] += features[r * d + j] / double(n);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0; i < d; ++i)
      for (int64_t j = 0; j < d; ++j)
        s.sigma[i * d + j] += (features[r * d + i] - s.mu[i]) * (features[r * d + j] - s.mu[j]) / double(n - 1);
  return s;
}

// Feeds rows [0, n) in batches of the given sizes (summing to n).
FeatureStats streamed(const Matrix& features, int64_t d, const std::vector<int64_t>& batches) {
  FeatureAccumulator acc(d);
  int64_t row = 0;
  for (int64_t rows : batches) {
    const Matrix part(features.begin() + row * d, features.begin() + (row + rows) * d);
    acc.add(from_vector<double>(part, {rows, d}));
    row += rows;
  }
  EXPECT_EQ(acc.count(), row);
  return acc.finish();
}

void expect_stats_near(const FeatureStats& got, const FeatureStats& want, double tol, const std::string& what) {
  EXPECT_EQ(got.count, want.count) << what;
  ASSERT_EQ(got.dim(), want.dim()) << what;
  EXPECT_LE(max_abs_difference(got.mu, want.mu), tol) << what << ": mu";
  EXPECT_LE(max_abs_difference(got.sigma, want.sigma), tol) << what << ": sigma";
}

TEST(FeatureStatistics, UnevenBatchesMatchOneBatchAndATwoPassComputation) {
  const int64_t n = 37, d = 5;
  const Matrix x = dense_test::random_matrix(n, d, 9);
  const FeatureStats reference = two_pass_stats(x, n, d);
  expect_stats_near(streamed(x, d, {n}), reference, 1e-14, "one batch");
  expect_stats_near(streamed(x, d, {1, 10, 3, 0, 22, 1}), reference, 1e-14, "uneven batches");
  expect_stats_near(streamed(x, d, {2, 35}), streamed(x, d, {30, 7}), 1e-14, "batch orders");
  const FeatureStats s = streamed(x, d, {n});
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j < d; ++j) EXPECT_EQ(s.sigma[i * d + j], s.sigma[j * d + i]) << i << ", " << j;
}

TEST(FeatureStatistics, LargeCommonOffsetKeepsItsAccuracy) {
  // Features 1e4 + noise of spread 1e-3: a one-pass sum of squares would lose every digit of the variance.
  const int64_t n = 400, d = 3;
  Matrix noise = dense_test::random_matrix(n, d, 4);
  Matrix x(noise.size());
  for (size_t i = 0; i < x.size(); ++i) {
    noise[i] *= 1e-3;
    x[i] = 1e4 + noise[i];
    noise[i] = x[i] - 1e4;  // exactly the offset-free part of the stored feature
  }
  const FeatureStats of_noise = two_pass_stats(noise, n, d);
  const FeatureStats s = streamed(x, d, {150, 50, 199, 1});
  for (int64_t j = 0; j < d; ++j) EXPECT_NEAR(s.mu[j], 1e4 + of_noise.mu[j], 1e-11);
  for (int64_t i = 0; i < d * d; ++i) EXPECT_NEAR(s.sigma[i], of_noise.sigma[i], 1e-12 * of_noise.sigma[0]) << i;
}

TEST(FeatureStatistics, TakesFloat32AndStridedFeatures) {
  const int64_t n = 9, d = 4;
  const Tensor f32 = test::rand_t({n, d}, 3);
  FeatureAccumulator from_f32(d), from_f64(d), from_transposed(d);
  from_f32.add(f32);
  from_f64.add(f32.to(DType::Float64));
  from_transposed.add(f32.t().contiguous().t());  // [n, d] with strides (1, n)
  const FeatureStats a = from_f32.finish(), b = from_f64.finish(), c = from_transposed.finish();
  EXPECT_EQ(a.mu, b.mu);
  EXPECT_EQ(a.sigma, b.sigma);
  EXPECT_EQ(a.mu, c.mu);
  EXPECT_EQ(a.sigma, c.sigma);
}

TEST(FeatureStatistics, AccumulatorErrorsNameWhatIsWrong) {
  test::expect_error([] { FeatureAccumulator(0); }, {"FeatureAccumulator", "at least 1", "got 0"});
  FeatureAccumulator acc(3);
  test::expect_error([&] { acc.add(zeros({4, 2})); }, {"FeatureAccumulator::add", "[B, 3]", "float32[4, 2]"});
  test::expect_error([&] { acc.add(zeros({4, 3}, DType::Int64)); }, {"FeatureAccumulator::add", "int64[4, 3]"});
  test::expect_error([&] { acc.add(zeros({3})); }, {"FeatureAccumulator::add", "float32[3]"});
  test::expect_error([&] { acc.add(from_vector<double>({0, 1, 2, 3, NAN, 5}, {2, 3})); },
                     {"FeatureAccumulator::add", "feature 1 of row 1", "nan"});
  EXPECT_EQ(acc.count(), 0);  // a rejected batch adds nothing
  test::expect_error([&] { acc.finish(); }, {"FeatureAccumulator::finish", "at least 2", "got 0"});
  acc.add(ones({1, 3}));
  test::expect_error([&] { acc.finish(); }, {"FeatureAccumulator::finish", "got 1"});
}

class FeatureStatsFile : public test::TempDirTest {
 protected:
  FeatureStats sample() const { return streamed(dense_test::random_matrix(20, 4, 5), 4, {20}); }
  // sample()'s members with `key` replaced by `value` (or removed when value is undefined), written to name.
  std::string write_with(const std::string& name, const std::string& key, const Tensor& value) const {
    const std::string p = path(name);
    save_feature_stats(p, sample());
    std::map<std::string, Tensor> arrays = load_npz(p);
    if (value.defined()) arrays[key] = value;
    else arrays.erase(key);
    save_npz(p, arrays);
    return p;
  }
};

TEST_F(FeatureStatsFile, RoundTripIsBitExactAndReadableAsPlainMembers) {
  const FeatureStats s = sample();
  save_feature_stats(path("stats.npz"), s);
  const FeatureStats back = load_feature_stats(path("stats.npz"));
  EXPECT_EQ(back.count, s.count);
  EXPECT_EQ(back.mu, s.mu);
  EXPECT_EQ(back.sigma, s.sigma);
  const std::map<std::string, Tensor> arrays = load_npz(path("stats.npz"));
  ASSERT_EQ(arrays.size(), 3u);
  EXPECT_EQ(describe(arrays.at("mu")), "float64[4] on cpu");
  EXPECT_EQ(describe(arrays.at("sigma")), "float64[4, 4] on cpu");
  EXPECT_EQ(arrays.at("count").dtype(), DType::Int64);
  EXPECT_EQ(arrays.at("count").item<int64_t>(), 20);
}

TEST_F(FeatureStatsFile, AcceptsACountOfShapeOneFloat32ArraysAndExtraMembers) {
  const std::string p = write_with("adm_like.npz", "count", from_vector<int64_t>({20}, {1}));
  std::map<std::string, Tensor> arrays = load_npz(p);
  arrays["mu"] = arrays["mu"].to(DType::Float32);
  arrays["arr_0"] = zeros({2, 8, 8, 3}, DType::UInt8);  // an ADM reference batch's images
  save_npz(p, arrays);
  const FeatureStats back = load_feature_stats(p);
  EXPECT_EQ(back.count, 20);
  EXPECT_EQ(back.mu, arrays["mu"].to_vector<double>());
  EXPECT_EQ(back.sigma, sample().sigma);
}

TEST_F(FeatureStatsFile, ReadsStatisticsWithoutACountAsUnknownCount) {
  const std::string p = write_with("no_count.npz", "count", Tensor());  // as ADM's reference statistics
  const FeatureStats back = load_feature_stats(p);
  EXPECT_EQ(back.count, 0);
  EXPECT_EQ(back.sigma, sample().sigma);
}

TEST_F(FeatureStatsFile, LoaderErrorsNameTheFileAndTheKey) {
  const std::string no_sigma = write_with("no_sigma.npz", "sigma", Tensor());
  test::expect_error([&] { load_feature_stats(no_sigma); }, {no_sigma, "'sigma'", "holds: count, mu"});
  const std::string wide = write_with("wide.npz", "sigma", zeros({4, 5}, DType::Float64));
  test::expect_error([&] { load_feature_stats(wide); }, {wide, "'sigma'", "float64[4, 5]", "[4, 4]"});
  const std::string nan_mu = write_with("nan_mu.npz", "mu", from_vector<double>({0, 1, NAN, 3}, {4}));
  test::expect_error([&] { load_feature_stats(nan_mu); }, {nan_mu, "'mu'", "entry 2", "nan"});
  Matrix skew = sample().sigma;
  skew[0 * 4 + 3] += 0.01;
  const std::string asymmetric = write_with("asymmetric.npz", "sigma", from_vector<double>(skew, {4, 4}));
  test::expect_error([&] { load_feature_stats(asymmetric); }, {asymmetric, "'sigma'", "not symmetric", "(0, 3)"});
  const std::string one = write_with("one.npz", "count", from_vector<int64_t>({1}, {}));
  test::expect_error([&] { load_feature_stats(one); }, {one, "'count'", "at least 2"});
  const std::string float_count = write_with("float_count.npz", "count", scalar_tensor(20.0));
  test::expect_error([&] { load_feature_stats(float_count); }, {float_count, "'count'", "one integer"});
  const std::string empty_mu = write_with("empty_mu.npz", "mu", zeros({0}, DType::Float64));
  test::expect_error([&] { load_feature_stats(empty_mu); }, {empty_mu, "'mu'", "non-empty"});
}

TEST_F(FeatureStatsFile, SaveRejectsInconsistentStatistics) {
  FeatureStats s = sample();
  s.sigma.pop_back();
  test::expect_error([&] { save_feature_stats(path("bad.npz"), s); }, {"save_feature_stats", "bad.npz", "d*d"});
  EXPECT_FALSE(std::filesystem::exists(path("bad.npz")));
}

}  // namespace
}  // namespace moh
