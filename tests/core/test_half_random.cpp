// bfloat16/float16 rounding (round to nearest even, NaN/inf/subnormals), Philox known-answer
// vectors (Random123's published test values) and the random factories' determinism and statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/factory.h"
#include "core/math/philox.h"
#include "core/ops.h"

namespace moh {
namespace {

TEST(Half, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  // 1 + 2^-8 lies exactly between 1 and 1 + 2^-7: ties to the even mantissa (1.0).
  EXPECT_EQ(BFloat16(1.0f + 1.0f / 256).bits, 0x3f80);
  // 1 + 3*2^-8 lies between 1+2^-7 (odd) and 1+2^-6 (even): goes up to the even one.
  EXPECT_EQ(BFloat16(1.0f + 3.0f / 256).bits, 0x3f82);
  EXPECT_EQ(BFloat16(1.0f + 1.0f / 256 + 1.0f / 65536).bits, 0x3f81);  // above the tie: up
  EXPECT_EQ(float(BFloat16(-2.5f)), -2.5f);
  EXPECT_TRUE(std::isnan(float(BFloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isinf(float(BFloat16(std::numeric_limits<float>::infinity()))));
  EXPECT_TRUE(std::isinf(float(BFloat16(3.4e38f))));  // rounds past the largest bf16
}

TEST(Half, Float16RoundsToNearestEvenIncludingSubnormals) {
  EXPECT_EQ(Float16(1.0f).bits, 0x3c00);
  EXPECT_EQ(Float16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(Float16(65519.0f).bits, 0x7bff);   // below the midpoint to 65536: max finite
  EXPECT_EQ(Float16(65520.0f).bits, 0x7c00);   // the tie rounds to even = infinity
  EXPECT_EQ(Float16(-1e9f).bits, 0xfc00);
  EXPECT_EQ(Float16(1.0f / 3).bits, 0x3555);
  EXPECT_EQ(Float16(1.0f + 1.0f / 2048).bits, 0x3c00);  // tie -> even
  EXPECT_EQ(Float16(1.0f + 3.0f / 2048).bits, 0x3c02);  // tie -> even (up)
  const float tiny = std::ldexp(1.0f, -24);              // smallest subnormal
  EXPECT_EQ(Float16(tiny).bits, 0x0001);
  EXPECT_EQ(Float16(tiny * 0.5f).bits, 0x0000);          // tie with zero -> even (0)
  EXPECT_EQ(Float16(tiny * 1.5f).bits, 0x0002);          // tie between 1 and 2 -> even (2)
  EXPECT_EQ(Float16(std::ldexp(1.0f, -14)).bits, 0x0400);  // smallest normal
  EXPECT_EQ(Float16(std::ldexp(1023.5f, -24)).bits, 0x0400);  // subnormal rounding into normal
  EXPECT_TRUE(std::isnan(float(Float16(std::numeric_limits<float>::quiet_NaN()))));
  for (uint32_t bits = 0; bits < 0x7c00; bits += 7) {  // every finite half survives the round trip
    Float16 h;
    h.bits = uint16_t(bits);
    EXPECT_EQ(Float16(float(h)).bits, bits);
  }
}

TEST(Philox, MatchesRandom123KnownAnswers) {
  Philox4 zero = philox4x32(0, 0, 0);
  EXPECT_EQ(zero.v[0], 0x6627e8d5u);
  EXPECT_EQ(zero.v[1], 0xe169c58du);
  EXPECT_EQ(zero.v[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.v[3], 0x9b00dbd8u);
  Philox4 ones = philox4x32(~0ull, ~0ull, ~0ull);
  EXPECT_EQ(ones.v[0], 0x408f276du);
  EXPECT_EQ(ones.v[1], 0x41c83b0eu);
  EXPECT_EQ(ones.v[2], 0xa20bc7c6u);
  EXPECT_EQ(ones.v[3], 0x6d5451fdu);
  Philox4 pi = philox4x32(0x299f31d0a4093822ull, 0x85a308d3243f6a88ull, 0x0370734413198a2eull);
  EXPECT_EQ(pi.v[0], 0xd16cfe09u);
  EXPECT_EQ(pi.v[1], 0x94fdccebu);
  EXPECT_EQ(pi.v[2], 0x5001e420u);
  EXPECT_EQ(pi.v[3], 0x24126ea1u);
}

// philox_normal's own log and cos/sin (no libm, so CPU and CUDA agree bit for bit) are accurate to
// about 1e-16 and round to the correctly rounded float on every uniform input (checked exhaustively
// once; here every 61st of the 2^24 inputs).
TEST(Philox, BoxMullerMathMatchesLibmToTheFloat) {
  int checked = 0;
  for (uint32_t k = 1; k <= (1u << 24); k += 61) {
    const float u = float(k) * (1.0f / 16777216.0f);
    const long double log_ref = std::log((long double)u);
    const double log_got = philox_log(u);
    ASSERT_LE(std::fabs((long double)log_got - log_ref), 1e-15L * std::fabs(log_ref)) << u;
    ASSERT_EQ(float(log_got), float(log_ref)) << u;
    const float angle = 6.283185307179586f * u;
    const long double cos_ref = std::cos((long double)angle), sin_ref = std::sin((long double)angle);
    const double cos_got = philox_cos_quadrant(angle, 0), sin_got = philox_cos_quadrant(angle, 3);
    ASSERT_LE(std::fabs((long double)cos_got - cos_ref), 1e-15L * std::fabs(cos_ref)) << angle;
    ASSERT_LE(std::fabs((long double)sin_got - sin_ref), 1e-15L * std::fabs(sin_ref)) << angle;
    ASSERT_EQ(float(cos_got), float(cos_ref)) << angle;
    ASSERT_EQ(float(sin_got), float(sin_ref)) << angle;
    ++checked;
  }
  EXPECT_GT(checked, 270000);
}

TEST(Random, SameSeedSameNumbersAndOffsetResumesTheStream) {
  Generator a(42), b(42);
  auto x = uniform({1000}, -1, 1, a).to_vector<float>();
  auto y = uniform({1000}, -1, 1, b).to_vector<float>();
  EXPECT_EQ(x, y);
  EXPECT_EQ(a.offset(), uniform_counters(1000));
  // Two draws of 10 from one generator equal one saved-state resume.
  Generator c(7);
  auto first = normal({10}, 0, 1, c).to_vector<float>();
  Generator resumed(c.seed(), c.offset());
  auto second = normal({10}, 0, 1, c).to_vector<float>();
  EXPECT_EQ(normal({10}, 0, 1, resumed).to_vector<float>(), second);
  EXPECT_NE(first, second);
  Generator other(43);
  EXPECT_NE(uniform({1000}, -1, 1, other).to_vector<float>(), x);
}

TEST(Random, DistributionsHaveTheRequestedMoments) {
  Generator gen(1);
  const int64_t n = 200000;
  for (DType t : {DType::Float32, DType::Float64}) {
    auto u = uniform({n}, 2, 4, gen, t).to_vector<double>();
    double mean = 0, var = 0, lo = 1e9, hi = -1e9;
    for (double v : u) { mean += v; lo = std::min(lo, v); hi = std::max(hi, v); }
    mean /= n;
    for (double v : u) var += (v - mean) * (v - mean);
    var /= n;
    EXPECT_NEAR(mean, 3.0, 0.01);
    EXPECT_NEAR(var, 4.0 / 12, 0.01);
    EXPECT_GT(lo, 2.0);
    EXPECT_LE(hi, 4.0);
  }
  auto z = normal({n}, 1, 2, gen).to_vector<double>();
  double mean = 0, var = 0;
  for (double v : z) mean += v;
  mean /= n;
  for (double v : z) var += (v - mean) * (v - mean);
  var /= n;
  EXPECT_NEAR(mean, 1.0, 0.02);
  EXPECT_NEAR(var, 4.0, 0.05);
  auto b = bernoulli({n}, 0.3, gen, DType::UInt8).to_vector<double>();
  double ones = 0;
  for (double v : b) { EXPECT_TRUE(v == 0 || v == 1); ones += v; }
  EXPECT_NEAR(ones / n, 0.3, 0.005);
  EXPECT_THROW(bernoulli({2}, 1.5, gen), Error);
  EXPECT_THROW(normal({2}, 0, -1, gen), Error);
}

TEST(Random, ResultDoesNotDependOnThreadCount) {
  const int before = num_threads();
  set_num_threads(1);
  Generator a(9);
  auto serial = normal({300000}, 0, 1, a).to_vector<float>();
  set_num_threads(2);
  Generator b(9);
  EXPECT_EQ(normal({300000}, 0, 1, b).to_vector<float>(), serial);
  set_num_threads(before);
}

}  // namespace
}  // namespace moh
