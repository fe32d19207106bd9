// ag::checkpoint: a float64 gradcheck through the recomputation, gradients bitwise equal to the
// unrecomputed graph (inputs, captured leaves used inside and outside the segment, accumulation onto
// earlier .grad), hooks fired once per backward with the final gradient, no recording under
// NoGradGuard, that only the segment's inputs stay alive between forward and backward, and errors.
#include <vector>

#include "autograd/checkpoint.h"
#include "core/allocator.h"
#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;
using agt::values;

// Two outputs from inputs {x [3, 4], y [4]} and a captured w [4, 4]: tanh(x w) * y and a 0-d sum.
std::vector<Variable> segment(const std::vector<Variable>& in, const Variable& w) {
  Variable h = mul(tanh(matmul(in[0], w)), in[1]);
  return {h, sum(mul(h, h))};
}

// L of both outputs, with w also used outside the segment.
Variable loss_of(const std::vector<Variable>& outs, const Variable& x, const Variable& w) {
  return add(add(sum(mul(outs[0], matmul(x, w))), mul(outs[1], 0.5)), sum(w));
}

TEST(ActivationCheckpoint, GradcheckThroughTheRecomputation) {
  Variable x = leaf({3, 4}, 1), y = leaf({4}, 2), w = leaf({4, 4}, 3);
  EXPECT_GRADCHECK(
      [](const std::vector<Variable>& v) {
        const Variable& w = v[2];
        std::vector<Variable> outs =
            checkpoint([&w](const std::vector<Variable>& in) { return segment(in, w); }, {v[0], v[1]}, {w});
        return add(outs[0], outs[1]);
      },
      {x, y, w});
}

TEST(ActivationCheckpoint, GradientsEqualTheUnrecomputedOnesBitwise) {
  Variable x = leaf({3, 4}, 1), y = leaf({4}, 2), w = leaf({4, 4}, 3);
  // Plain, twice (the second backward accumulates onto the first's .grad).
  for (int i = 0; i < 2; ++i) backward(loss_of(segment({x, y}, w), x, w));
  const auto gx = values(x.grad()), gy = values(y.grad()), gw = values(w.grad());
  x.zero_grad(), y.zero_grad(), w.zero_grad();
  for (int i = 0; i < 2; ++i) {
    std::vector<Variable> outs =
        checkpoint([&w](const std::vector<Variable>& in) { return segment(in, w); }, {x, y}, {w});
    backward(loss_of(outs, x, w));
  }
  EXPECT_EQ(values(x.grad()), gx);
  EXPECT_EQ(values(y.grad()), gy);
  EXPECT_EQ(values(w.grad()), gw);
  EXPECT_EQ(tape_size(), 0u);
}

TEST(ActivationCheckpoint, CapturedLeafHooksFireOnceWithTheFinalGradient) {
  Variable x = leaf({3, 4}, 1), y = leaf({4}, 2), w = leaf({4, 4}, 3);
  backward(loss_of(segment({x, y}, w), x, w));
  const auto expected = values(w.grad());
  w.zero_grad();
  std::vector<std::vector<double>> seen;
  w.register_hook([&seen](Variable& v) { seen.push_back(values(v.grad())); });
  std::vector<Variable> outs =
      checkpoint([&w](const std::vector<Variable>& in) { return segment(in, w); }, {x, y}, {w});
  backward(loss_of(outs, x, w));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], expected);
}

TEST(ActivationCheckpoint, RecordsNothingWithoutGrad) {
  Variable x = leaf({3, 4}, 1), y = leaf({4}, 2), w = leaf({4, 4}, 3);
  NoGradGuard no_grad;
  std::vector<Variable> outs =
      checkpoint([&w](const std::vector<Variable>& in) { return segment(in, w); }, {x, y}, {w});
  EXPECT_EQ(tape_size(), 0u);
  EXPECT_FALSE(outs[0].requires_grad());
}

TEST(ActivationCheckpoint, KeepsOnlyTheInputsUntilBackward) {
  // Eight 256 KiB intermediates inside the segment: recorded plainly they stay alive until backward.
  Variable x = leaf({32, 1024}, 4);
  auto chain = [](const std::vector<Variable>& in) {
    Variable h = in[0];
    for (int i = 0; i < 8; ++i) h = tanh(h);
    return std::vector<Variable>{h};
  };
  Allocator& cpu = cpu_allocator();
  const int64_t before = cpu.stats().current_bytes;
  Variable plain = chain({x})[0];
  const int64_t plain_bytes = cpu.stats().current_bytes - before;
  backward(sum(plain));
  const auto g = values(x.grad());
  x.zero_grad();
  plain = Variable();
  const int64_t before2 = cpu.stats().current_bytes;
  Variable recomputed = checkpoint(chain, {x}, {})[0];
  const int64_t recomputed_bytes = cpu.stats().current_bytes - before2;
  EXPECT_GE(plain_bytes, 8 * (1 << 18));
  EXPECT_LE(recomputed_bytes, 2 * (1 << 18));  // the output (and nothing of the chain)
  backward(sum(recomputed));
  EXPECT_EQ(values(x.grad()), g);
}

TEST(ActivationCheckpoint, RejectsNonLeafCapturesAndChangingOutputs) {
  Variable x = leaf({3, 4}, 1), y = leaf({4}, 2), w = leaf({4, 4}, 3);
  Variable derived = mul(w, 2.0);
  try {
    checkpoint([&w](const std::vector<Variable>& in) { return segment(in, w); }, {x, y}, {derived});
    ADD_FAILURE() << "a non-leaf capture was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a leaf"), std::string::npos) << e.what();
  }
  EXPECT_THROW(checkpoint([&w](const std::vector<Variable>& in) { return segment(in, w); }, {x, y}, {w, w}), Error);
  clear_tape();
  int calls = 0;
  std::vector<Variable> outs = checkpoint(
      [&](const std::vector<Variable>& in) {
        std::vector<Variable> o = segment(in, w);
        if (++calls > 1) o.pop_back();  // the recomputation differs from the forward
        return o;
      },
      {x, y}, {w});
  try {
    backward(add(sum(outs[0]), outs[1]));
    ADD_FAILURE() << "a changed recomputation was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("same thing both times"), std::string::npos) << e.what();
  }
  clear_tape();
}

}  // namespace
}  // namespace moh::ag
