// The tape engine: gradient accumulation, fan-out, broadcast reduction, leaf hooks (once per
// backward, only when final, in order), NoGradGuard, detach, multi-output nodes, readable
// errors, and that backward frees the tape so activation memory returns.
#include <cmath>
#include <string>

#include "core/allocator.h"
#include "tests/autograd/autograd_test_util.h"

namespace moh::ag {
namespace {

using agt::leaf;
using agt::values;
using Vec = std::vector<double>;

Variable vec(const Vec& v, const Shape& shape, bool requires_grad = true) {
  return Variable(from_vector<double>(v, shape), requires_grad);
}

template <class F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected moh::Error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(AutogradEngine, GradientsAccumulateAcrossBackwards) {
  Variable x = vec({1, 2, 3}, {3});
  for (int i = 0; i < 2; ++i) backward(sum(mul(x, x)));
  EXPECT_EQ(values(x.grad()), (Vec{4, 8, 12}));
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
  backward(sum(x * 3.0));
  EXPECT_EQ(values(x.grad()), (Vec{3, 3, 3}));
  EXPECT_EQ(tape_size(), 0u);
}

TEST(AutogradEngine, VariableUsedTwiceSumsBothPaths) {
  Variable x = vec({0.5, -1, 2}, {3});
  Variable h = exp(x);               // a non-leaf used twice
  backward(sum(h * h + h + x * x));  // d/dx = 2 e^2x + e^x + 2x
  Vec g = values(x.grad()), xs{0.5, -1, 2};
  for (size_t i = 0; i < 3; ++i)
    EXPECT_NEAR(g[i], 2 * std::exp(2 * xs[i]) + std::exp(xs[i]) + 2 * xs[i], 1e-12);
}

TEST(AutogradEngine, BroadcastInputGradientsAreSummedToTheirShape) {
  Variable a = vec({1, 2, 3, 4, 5, 6}, {2, 3});
  Variable b = vec({1, 10, 100}, {3});
  Variable c = vec({7, 8}, {2, 1});
  Variable s = vec({2}, {});
  Variable y = a * b + c * s;
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  backward(y, from_vector<double>({1, 1, 1, 2, 2, 2}, {2, 3}));
  EXPECT_EQ(values(a.grad()), (Vec{1, 10, 100, 2, 20, 200}));
  EXPECT_EQ(values(b.grad()), (Vec{1 + 8, 2 + 10, 3 + 12}));
  EXPECT_EQ(b.grad().shape(), (Shape{3}));
  EXPECT_EQ(values(c.grad()), (Vec{6, 12}));
  EXPECT_EQ(c.grad().shape(), (Shape{2, 1}));
  EXPECT_EQ(values(s.grad()), (Vec{3 * 7 + 6 * 8}));
  EXPECT_EQ(s.grad().dim(), 0);
}

TEST(AutogradEngine, HooksFireOncePerLeafOnlyWhenTheirGradientIsFinal) {
  Variable x = vec({0.1, 0.2}, {2}), w = vec({1.5, -0.5}, {2}), v = vec({2, 3}, {2});
  x.set_name("x");
  w.set_name("w");
  v.set_name("v");
  Variable unused = vec({1, 1}, {2});
  std::vector<std::string> order;
  std::vector<Tensor> seen;
  for (Variable* p : {&x, &w, &v, &unused}) {
    p->register_hook([&](Variable& leaf) {
      order.push_back(leaf.name());
      seen.push_back(leaf.grad().clone());
    });
  }
  for (int step = 1; step <= 2; ++step) {
    order.clear();
    seen.clear();
    Variable side = unused * 2.0;  // recorded but not connected to the loss
    // w is consumed by the first and the last node: final only after the first node has run.
    Variable loss = sum(tanh(x * w) * v * w);
    backward(loss);
    ASSERT_EQ(order, (std::vector<std::string>{"v", "x", "w"})) << "step " << step;
    EXPECT_EQ(values(seen[0]), values(v.grad()));
    EXPECT_EQ(values(seen[1]), values(x.grad()));
    EXPECT_EQ(values(seen[2]), values(w.grad()));
    EXPECT_FALSE(unused.grad().defined());
  }
  // Second backward accumulated: the hook saw twice the single-step gradient.
  Vec xs{0.1, 0.2}, ws{1.5, -0.5}, vs{2, 3};
  for (size_t i = 0; i < 2; ++i) {
    const double t = std::tanh(xs[i] * ws[i]), dt = 1 - t * t;
    EXPECT_NEAR(values(w.grad())[i], 2 * (dt * xs[i] * vs[i] * ws[i] + t * vs[i]), 1e-12);
  }
}

TEST(AutogradEngine, HooksFollowTheReverseOfAChain) {
  Variable x = vec({1, 2}, {2}, false);
  std::vector<Variable> ws;
  std::vector<int> order;
  for (int i = 0; i < 4; ++i) {
    ws.push_back(vec({1.0 + i, 2.0}, {2}));
    ws.back().register_hook([&order, i](Variable&) { order.push_back(i); });
  }
  Variable h = x;
  for (const Variable& w : ws) h = h * w;
  backward(sum(h));
  EXPECT_EQ(order, (std::vector<int>{3, 2, 1, 0}));
}

TEST(AutogradEngine, NoGradGuardRecordsNothing) {
  Variable x = vec({1, 2}, {2});
  EXPECT_TRUE(grad_enabled());
  {
    NoGradGuard outer;
    {
      NoGradGuard inner;
      EXPECT_FALSE(grad_enabled());
    }
    EXPECT_FALSE(grad_enabled());
    Variable y = exp(x * x);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(y.is_leaf());
    EXPECT_EQ(tape_size(), 0u);
    expect_error([&] { backward(sum(y)); }, "does not require grad");
  }
  EXPECT_TRUE(grad_enabled());
  Variable y = x * x;
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(tape_size(), 1u);
  clear_tape();
  EXPECT_EQ(tape_size(), 0u);
  // Nothing requiring grad: nothing recorded.
  Variable c = vec({1, 2}, {2}, false);
  EXPECT_FALSE((c * c).requires_grad());
  EXPECT_EQ(tape_size(), 0u);
}

TEST(AutogradEngine, DetachCutsTheGraph) {
  Variable x = vec({0.5, 1.5}, {2}), w = vec({2, 3}, {2});
  Variable d = exp(x).detach();
  EXPECT_TRUE(d.is_leaf());
  EXPECT_FALSE(d.requires_grad());
  backward(sum(d * w));
  EXPECT_FALSE(x.grad().defined());
  EXPECT_NEAR(values(w.grad())[1], std::exp(1.5), 1e-12);
  Variable xd = x.detach();
  EXPECT_TRUE(xd.data().shares_storage(x.data()));
}

TEST(AutogradEngine, UnusedOutputsOfAMultiOutputNodeGetZeroGradient) {
  Variable x = vec({1, 2, 3, 4, 5, 6}, {6});
  std::vector<Variable> parts = split(x, 2, 0);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(tape_size(), 1u);
  backward(sum(parts[1] * 3.0));
  EXPECT_EQ(values(x.grad()), (Vec{0, 0, 3, 3, 0, 0}));
}

TEST(AutogradEngine, SetGradAccumulatesInPlaceIntoTheGivenBuffer) {
  Variable x = vec({1, 2, 3}, {3});
  Tensor bucket = zeros({6}, DType::Float64);
  x.set_grad(bucket.narrow(0, 3, 3));
  backward(sum(x * 2.0));
  EXPECT_EQ(values(bucket), (Vec{0, 0, 0, 2, 2, 2}));
  EXPECT_THROW(x.set_grad(zeros({2}, DType::Float64)), Error);
  EXPECT_THROW(x.set_grad(zeros({3}, DType::Float32)), Error);
}

TEST(AutogradEngine, LeafGradientNeverAliasesGradOut) {
  Variable x = vec({1, 2, 3}, {3});
  Tensor g = ones({3}, DType::Float64);
  backward(x + 0.0, g);  // the gradient passes through unchanged
  backward(x + 0.0, g);
  EXPECT_EQ(values(x.grad()), (Vec{2, 2, 2}));
  EXPECT_EQ(values(g), (Vec{1, 1, 1}));
  Variable s = vec({4}, {1});
  backward(s);  // a leaf as the loss
  EXPECT_EQ(values(s.grad()), (Vec{1}));
}

TEST(AutogradEngine, ErrorsAreReadable) {
  Variable x = vec({1, 2, 3}, {3});
  x.set_name("x");
  Variable y = x * 2.0;
  expect_error([&] { backward(y); }, "not a 1-element tensor");
  EXPECT_EQ(tape_size(), 1u);  // a rejected backward keeps the tape
  expect_error([&] { backward(y, ones({2}, DType::Float64)); }, "does not match");
  backward(y, ones({3}, DType::Float64));
  expect_error([&] { backward(y, ones({3}, DType::Float64)); }, "already freed");
  expect_error([&] { backward(vec({1}, {1}, false)); }, "does not require grad");
  expect_error([&] { backward(Variable()); }, "undefined");

  Variable h = x * 2.0;
  clear_tape();
  expect_error([&] { (void)(x * h); }, "cleared");
  backward(sum(x * x));  // the rejected call left the tape consistent: x still gets its gradient
  EXPECT_EQ(agt::values(x.grad()), (Vec{2 + 2, 4 + 2, 6 + 2}));
  expect_error([&] { h.register_hook([](Variable&) {}); }, "not a leaf");
  expect_error([&] { h.set_requires_grad(false); }, "not a leaf");
  expect_error([&] { (void)Variable(arange(3), true); }, "not floating point");
  expect_error([&] { Variable().data(); }, "undefined Variable");
  expect_error([&] { (void)Variable(Tensor()); }, "undefined tensor");
  EXPECT_NE(x.describe().find("'x' float64[3]"), std::string::npos) << x.describe();

  // A backward closure that returns the wrong number of gradients is named.
  Variable bad = record("bad_op", x.data().clone(), {x},
                        [](const Tensor&, const Needs&) { return std::vector<Tensor>{}; });
  expect_error([&] { backward(bad, ones({3}, DType::Float64)); }, "bad_op");
  EXPECT_EQ(tape_size(), 0u);
}

TEST(AutogradEngine, TapeIsFreedAfterBackwardSoMemoryReturns) {
  Allocator& alloc = cpu_allocator();
  Variable x = leaf({128, 64}, 1), w = leaf({64}, 2);
  const int64_t before = alloc.stats().current_bytes;
  {
    Variable loss = sum(exp(tanh(x * w)) * x);
    // tanh and exp outputs are saved by their closures.
    EXPECT_GE(alloc.stats().current_bytes, before + 2 * int64_t(x.data().nbytes()));
    EXPECT_EQ(tape_size(), 5u);
    backward(loss);
    EXPECT_EQ(tape_size(), 0u);
  }
  EXPECT_EQ(alloc.stats().current_bytes, before + int64_t(x.grad().nbytes() + w.grad().nbytes()));
  x.zero_grad();
  w.zero_grad();
  EXPECT_EQ(alloc.stats().current_bytes, before);
}

}  // namespace
}  // namespace moh::ag
