// The LLM sampler on hand-made logits: greedy at temperature 0 and with top-k 1, temperature
// scaling, top-k keeps exactly k tokens (ties to the lower id), top-p keeps the smallest set whose
// mass reaches p, the inverse-CDF draw, determinism of a seed (and a different seed differing),
// the empirical frequencies of many draws, and option errors.
#include <gtest/gtest.h>

#include <cmath>

#include "core/factory.h"
#include "models/llm/sampler.h"
#include "tests/test_util.h"

namespace moh {
namespace {

SamplerOptions opts(double temperature, int64_t top_k, double top_p) { return {temperature, top_k, top_p}; }

void expect_probs(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "token " << i;
}

TEST(LlmSampler, TemperatureZeroAndTopKOneAreGreedy) {
  const std::vector<double> logits{0.5, 2.0, -1.0, 2.0, 1.9};
  expect_probs(sampling_distribution(logits, opts(0, 0, 1)), {0, 1, 0, 0, 0});  // first of equal maxima
  expect_probs(sampling_distribution(logits, opts(1.5, 1, 1)), {0, 1, 0, 0, 0});
  Sampler greedy(opts(0, 200, 1), 1), top1(opts(2.0, 1, 0.5), 99);
  Tensor batch = from_vector<float>({0.1f, 0.3f, 0.2f, 3.0f, -2.0f, 1.0f}, {2, 3});
  EXPECT_EQ(greedy.sample(batch), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(top1.sample(batch), (std::vector<int64_t>{1, 0}));
}

TEST(LlmSampler, TemperatureScalesTheSoftmax) {
  const std::vector<double> logits{0.0, std::log(3.0)};  // softmax 1/4, 3/4 at temperature 1
  expect_probs(sampling_distribution(logits, opts(1, 0, 1)), {0.25, 0.75});
  // At temperature 2 the ratio is sqrt(3).
  const double r = std::sqrt(3.0);
  expect_probs(sampling_distribution(logits, opts(2, 0, 1)), {1 / (1 + r), r / (1 + r)});
}

TEST(LlmSampler, TopKKeepsTheKLargestAndBreaksTiesToTheLowerId) {
  const std::vector<double> logits{1.0, 3.0, 2.0, 2.0, 0.0};
  std::vector<double> p = sampling_distribution(logits, opts(1, 2, 1));  // keeps ids 1 and 2 (2 ties 3)
  const double z = std::exp(3.0) + std::exp(2.0);
  expect_probs(p, {0, std::exp(3.0) / z, std::exp(2.0) / z, 0, 0});
  expect_probs(sampling_distribution(logits, opts(1, 50, 1)), sampling_distribution(logits, opts(1, 0, 1)));
}

TEST(LlmSampler, TopPKeepsTheSmallestSetReachingP) {
  const std::vector<double> logits{std::log(0.1), std::log(0.5), std::log(0.15), std::log(0.25)};
  // Sorted: 0.5 (id 1), 0.25 (id 3), 0.15 (id 2), 0.1 (id 0).
  expect_probs(sampling_distribution(logits, opts(1, 0, 0.45)), {0, 1, 0, 0});  // 0.5 alone reaches 0.45
  expect_probs(sampling_distribution(logits, opts(1, 0, 0.6)), {0, 0.5 / 0.75, 0, 0.25 / 0.75});
  expect_probs(sampling_distribution(logits, opts(1, 0, 0.85)), {0, 0.5 / 0.9, 0.15 / 0.9, 0.25 / 0.9});
  expect_probs(sampling_distribution(logits, opts(1, 0, 0.01)), {0, 1, 0, 0});  // never empty
  // Top-k first, then top-p over the kept tokens renormalised: k = 3 leaves 0.556, 0.278, 0.167, whose
  // first two reach 0.8 but not 0.85.
  expect_probs(sampling_distribution(logits, opts(1, 3, 0.85)), {0, 0.5 / 0.9, 0.15 / 0.9, 0.25 / 0.9});
  expect_probs(sampling_distribution(logits, opts(1, 3, 0.8)), {0, 0.5 / 0.75, 0, 0.25 / 0.75});
}

TEST(LlmSampler, DrawWalksTheCumulativeDistribution) {
  const std::vector<double> p{0, 0.25, 0, 0.5, 0.25};
  EXPECT_EQ(draw_token(p, 0.0), 1);
  EXPECT_EQ(draw_token(p, 0.2499), 1);
  EXPECT_EQ(draw_token(p, 0.25), 3);
  EXPECT_EQ(draw_token(p, 0.7499), 3);
  EXPECT_EQ(draw_token(p, 0.75), 4);
  EXPECT_EQ(draw_token(p, 0.9999999999999999), 4);
}

TEST(LlmSampler, ASeedGivesTheSameTokensAndAnotherSeedOthers) {
  Generator gen(5);
  Tensor logits = normal({4, 50}, 0, 2, gen);
  auto run = [&](uint64_t seed) {
    Sampler s(opts(1.0, 0, 1.0), seed);
    std::vector<int64_t> all;
    for (int i = 0; i < 20; ++i)
      for (int64_t t : s.sample(logits)) all.push_back(t);
    return all;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

TEST(LlmSampler, DrawFrequenciesFollowTheFilteredDistribution) {
  const std::vector<float> row{0.0f, float(std::log(2.0)), float(std::log(5.0)), -30.0f};
  Tensor logits = from_vector<float>(row, {1, 4});
  Sampler s(opts(1.0, 3, 1.0), 11);  // top-k 3 drops id 3; the rest are 1/8, 2/8, 5/8
  std::vector<double> counts(4, 0);
  const int draws = 8000;
  for (int i = 0; i < draws; ++i) counts[size_t(s.sample(logits)[0])] += 1.0 / draws;
  EXPECT_EQ(counts[3], 0.0);
  EXPECT_NEAR(counts[0], 0.125, 0.02);
  EXPECT_NEAR(counts[1], 0.25, 0.02);
  EXPECT_NEAR(counts[2], 0.625, 0.02);
}

TEST(LlmSampler, OptionErrorsNameTheOption) {
  test::expect_error([] { Sampler(opts(-1, 0, 1), 1); }, {"temperature must be >= 0", "-1"});
  test::expect_error([] { Sampler(opts(1, -3, 1), 1); }, {"top_k must be >= 0", "-3"});
  test::expect_error([] { Sampler(opts(1, 0, 0), 1); }, {"top_p must be in (0, 1]"});
  test::expect_error([] { Sampler(opts(1, 0, 1.5), 1); }, {"top_p must be in (0, 1]", "1.5"});
  test::expect_error([] { sampling_distribution({1.0, NAN}, opts(1, 0, 1)); }, {"logit 1 is NaN"});
  Sampler s(opts(1, 0, 1), 1);
  test::expect_error([&] { s.sample(from_vector<float>({1.0f}, {1})); }, {"expected logits [B, V]"});
}

}  // namespace
}  // namespace moh
