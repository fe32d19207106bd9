// Mixup/CutMix: the Beta sampler's moments, the exact blend and box paste against the partner sample,
// lam equal to the pasted area, prob 0 leaves the batch alone, and determinism for a generator state.
#include <gtest/gtest.h>

#include <cmath>

#include "core/factory.h"
#include "data/mixup.h"
#include "tests/test_util.h"

namespace moh {
namespace {

TEST(Mixup, BetaSamplesHaveTheRightMoments) {
  for (double alpha : {0.2, 0.8, 1.0, 3.0}) {
    Generator gen(11);
    const int n = 4000;
    double sum = 0, sq = 0;
    for (int i = 0; i < n; ++i) {
      const double x = sample_beta(alpha, gen);
      ASSERT_GE(x, 0.0);
      ASSERT_LE(x, 1.0);
      sum += x;
      sq += x * x;
    }
    const double mean = sum / n, var = sq / n - mean * mean;
    EXPECT_NEAR(mean, 0.5, 0.02) << alpha;
    EXPECT_NEAR(var, 1.0 / (4 * (2 * alpha + 1)), 0.012) << alpha;  // Beta(a, a) variance
  }
}

TEST(Mixup, MixupBlendsEachSampleWithItsReverse) {
  const Tensor x = test::rand_t({4, 2, 3, 3}, 1);
  const Tensor y = from_vector<int64_t>({0, 1, 2, 3}, {4});
  Generator gen(3);
  MixedBatch m = mix_batch(x, y, MixOptions{.mixup_alpha = 0.8}, gen);
  ASSERT_LT(m.lam, 1.0);
  EXPECT_EQ(m.partner_labels.to_vector<int64_t>(), (std::vector<int64_t>{3, 2, 1, 0}));
  const auto in = x.to_vector<float>(), out = m.images.to_vector<float>();
  for (int64_t s = 0; s < 4; ++s)
    for (int64_t i = 0; i < 18; ++i)
      EXPECT_NEAR(out[size_t(s * 18 + i)], m.lam * in[size_t(s * 18 + i)] + (1 - m.lam) * in[size_t((3 - s) * 18 + i)],
                  1e-6);
}

TEST(Mixup, CutMixPastesABoxAndLamIsTheKeptArea) {
  const Tensor x = test::rand_t({3, 1, 16, 16}, 2);
  const Tensor y = from_vector<int64_t>({5, 6, 7}, {3});
  int mixed_batches = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Generator gen(seed);
    MixedBatch m = mix_batch(x, y, MixOptions{.cutmix_alpha = 1.0}, gen);
    const auto in = x.to_vector<float>(), out = m.images.to_vector<float>();
    int64_t pasted = 0;
    for (int64_t p = 0; p < 256; ++p) {
      const bool from_partner = out[size_t(p)] == in[size_t(2 * 256 + p)] && out[size_t(p)] != in[size_t(p)];
      ASSERT_TRUE(from_partner || out[size_t(p)] == in[size_t(p)]) << "pixel " << p;
      pasted += from_partner;
      EXPECT_EQ(out[size_t(256 + p)], in[size_t(256 + p)]);  // the middle sample is its own partner
    }
    EXPECT_NEAR(m.lam, 1.0 - double(pasted) / 256.0, 1e-12) << "seed " << seed;
    mixed_batches += pasted > 0;
  }
  EXPECT_GT(mixed_batches, 10);
}

TEST(Mixup, ProbabilityZeroOrDisabledLeavesTheBatchAndIsDeterministic) {
  const Tensor x = test::rand_t({2, 1, 4, 4}, 4);
  const Tensor y = from_vector<int64_t>({1, 2}, {2});
  Generator gen(1);
  MixedBatch off = mix_batch(x, y, MixOptions{.mixup_alpha = 1.0, .prob = 0.0}, gen);
  EXPECT_EQ(off.lam, 1.0);
  test::expect_same_bytes(off.images, x, "unmixed");
  Generator g1(8), g2(8);
  const MixOptions both{.mixup_alpha = 0.8, .cutmix_alpha = 1.0};
  MixedBatch a = mix_batch(x, y, both, g1), b = mix_batch(x, y, both, g2);
  EXPECT_EQ(a.lam, b.lam);
  test::expect_same_bytes(a.images, b.images, "same generator state");
  test::expect_error([&] { mix_batch(zeros({2, 4}), y, both, g1); }, {"mix_batch", "[B, C, H, W]"});
}

}  // namespace
}  // namespace moh
