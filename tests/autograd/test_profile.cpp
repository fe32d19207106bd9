// PhaseProfiler / ProfileScope: forward time charged to the open phase (exclusive of inner scopes), each
// tape node's backward charged to the phase it was recorded in, backward time kept out of every forward.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "autograd/autograd.h"
#include "autograd/profile.h"
#include "core/factory.h"
#include "tests/test_util.h"

namespace moh::ag {
namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// y = 2 x, whose backward sleeps `ms` before returning the gradient.
Variable slow_double(const Variable& x, int ms) {
  return record("slow_double", moh::mul(x.data(), 2.0), {x}, [ms](const Tensor& g, const Needs&) {
    sleep_ms(ms);
    return std::vector<Tensor>{moh::mul(g, 2.0)};
  });
}

TEST(PhaseProfiler, ChargesForwardAndBackwardTimeToTheirPhases) {
  PhaseProfiler profiler;
  Variable x(ones({4}), true);
  Variable y;
  {
    ProfileScope outer("outer");
    sleep_ms(20);
    {
      ProfileScope inner("inner");
      sleep_ms(200);
      y = slow_double(x, 200);
    }
    y = slow_double(y, 0);
  }
  backward(sum(y));
  sleep_ms(5);  // outside any scope: rest
  const auto& phases = profiler.phases();
  ASSERT_TRUE(phases.count("outer") && phases.count("inner") && phases.count(kRestPhase));
  const PhaseTime outer = phases.at("outer"), inner = phases.at("inner"), rest = phases.at(kRestPhase);
  EXPECT_GE(inner.forward_ms, 200);
  EXPECT_GE(outer.forward_ms, 20);
  EXPECT_LT(outer.forward_ms, 200) << "the inner scope's time is not the outer's";
  EXPECT_GE(inner.backward_ms, 200) << "the slow node was recorded in inner";
  EXPECT_LT(outer.backward_ms, 200);
  EXPECT_GE(rest.forward_ms, 5);
  EXPECT_LT(rest.forward_ms, 200) << "the backward's time is nobody's forward";
  EXPECT_DOUBLE_EQ(x.grad().to_vector<double>()[0], 4.0);
}

TEST(PhaseProfiler, ScopesWithoutAProfilerDoNothingAndProfilersDoNotNest) {
  {
    ProfileScope unprofiled("unprofiled");
    Variable x(ones({2}), true);
    backward(sum(slow_double(x, 0)));
    EXPECT_DOUBLE_EQ(x.grad().to_vector<double>()[1], 2.0);
  }
  PhaseProfiler profiler;
  test::expect_error([] { PhaseProfiler second; }, {"PhaseProfiler", "already has one"});
  EXPECT_EQ(active_profiler(), &profiler);
  EXPECT_EQ(profiler.phases().count("unprofiled"), 0u);
}

}  // namespace
}  // namespace moh::ag
