// dropout: the mask follows the documented Philox rule element by element (so the CUDA kernel can
// be checked against it), same (seed, offset) repeats, the generator advances, the kept fraction
// matches 1 - p, scaling is exact, p = 0 / 1 edges, non-contiguous input, and errors.
#include <gtest/gtest.h>

#include <cmath>

#include "core/factory.h"
#include "core/math/dropout_math.h"
#include "core/ops.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using test::rand_t;
template <class T>
void expect_rule(const Tensor& x, double p, uint64_t seed, uint64_t offset) {
  Generator gen(seed, offset);
  DropoutForward r = dropout(x, p, gen);
  ASSERT_EQ(r.out.shape(), x.shape());
  ASSERT_EQ(r.mask.shape(), x.shape());
  EXPECT_EQ(r.mask.dtype(), DType::Bool);
  EXPECT_EQ(r.out.dtype(), x.dtype());
  EXPECT_EQ(gen.offset(), offset + uniform_counters(x.numel()));
  auto xv = x.to_vector<T>(), ov = r.out.to_vector<T>();
  auto mv = r.mask.to_vector<bool>();
  const T scale = T(1.0 / (1.0 - p));
  for (size_t i = 0; i < xv.size(); ++i) {
    const bool keep = philox_uniform(philox_word(seed, offset, i)) > float(p);
    ASSERT_EQ(mv[i], keep) << "element " << i;
    ASSERT_EQ(keep, dropout_keep(philox_word(seed, offset, i), dropout_threshold(p)));
    ASSERT_EQ(ov[i], keep ? xv[i] * scale : T(0)) << "element " << i;  // exact
  }
}

TEST(Dropout, FollowsThePhiloxRuleExactly) {
  expect_rule<float>(rand_t({1001}, 1), 0.3, 42, 5);
  expect_rule<double>(rand_t({7, 9}, 2, DType::Float64), 0.55, 7, 0);
  expect_rule<float>(rand_t({9, 7}, 3).t(), 0.1, 9, 123);        // logical (row-major) order of a view
  expect_rule<float>(rand_t({300, 400}, 4), 0.2, 11, 1u << 20);  // parallel path
}

TEST(Dropout, SameSeedAndOffsetRepeatAndGeneratorAdvances) {
  Tensor x = rand_t({37, 11}, 5);
  Generator g1(3, 10), g2(3, 10);
  auto a = dropout(x, 0.4, g1), b = dropout(x, 0.4, g2);
  EXPECT_EQ(a.mask.to_vector<bool>(), b.mask.to_vector<bool>());
  EXPECT_EQ(a.out.to_vector<float>(), b.out.to_vector<float>());
  EXPECT_EQ(g1.offset(), 10 + uniform_counters(37 * 11));
  auto c = dropout(x, 0.4, g1);  // next call draws fresh numbers
  EXPECT_NE(c.mask.to_vector<bool>(), a.mask.to_vector<bool>());
  Generator other_seed(4, 10);
  EXPECT_NE(dropout(x, 0.4, other_seed).mask.to_vector<bool>(), a.mask.to_vector<bool>());
}

TEST(Dropout, KeptFractionWithinThreeSigma) {
  const int64_t n = 100000;
  Tensor x = ones({n});
  Generator gen(2024);
  for (double p : {0.1, 0.5, 0.9}) {
    auto m = dropout(x, p, gen).mask.to_vector<bool>();
    double kept = 0;
    for (bool k : m) kept += k;
    const double sigma = std::sqrt(double(n) * p * (1 - p));
    EXPECT_NEAR(kept, double(n) * (1 - p), 3 * sigma) << "p = " << p;
  }
}

TEST(Dropout, ZeroAndOneEdges) {
  Tensor x = rand_t({5, 6}, 6);
  Generator gen(1);
  auto keep_all = dropout(x, 0.0, gen);
  EXPECT_EQ(keep_all.out.to_vector<float>(), x.to_vector<float>());
  EXPECT_FALSE(keep_all.out.shares_storage(x));
  EXPECT_EQ(keep_all.mask.to_vector<bool>(), std::vector<bool>(30, true));
  auto drop_all = dropout(x, 1.0, gen);
  EXPECT_EQ(drop_all.out.to_vector<float>(), std::vector<float>(30, 0.0f));
  EXPECT_EQ(drop_all.mask.to_vector<bool>(), std::vector<bool>(30, false));
  EXPECT_EQ(gen.offset(), 2 * uniform_counters(30));  // the stream advances even at the edges
  auto empty = dropout(zeros({0, 3}), 0.5, gen);
  EXPECT_EQ(empty.out.shape(), (Shape{0, 3}));
  EXPECT_EQ(dropout(scalar_tensor(2.0), 0.0, gen).out.item<float>(), 2.0f);
}

TEST(Dropout, Errors) {
  Tensor x = rand_t({4}, 7);
  Generator gen(1);
  EXPECT_THROW(dropout(x, -0.1, gen), Error);
  EXPECT_THROW(dropout(x, 1.5, gen), Error);
  EXPECT_THROW(dropout(x, NAN, gen), Error);
  EXPECT_THROW(dropout(x.to(DType::Int64), 0.5, gen), Error);
  EXPECT_THROW(dropout(Tensor(), 0.5, gen), Error);
  EXPECT_EQ(gen.offset(), 0u);  // failed calls consume nothing
}

}  // namespace
}  // namespace moh
