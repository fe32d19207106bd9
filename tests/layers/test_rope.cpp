// Rotary embeddings: HF-LLaMA golden values (shared and per-sample position_ids, two thetas), the
// tables against the formula, identity at position 0, the relative-position property of dot
// products, float64 gradchecks of the fused node (strided input, per-sample positions), errors.
#include <gtest/gtest.h>

#include <cmath>

#include "core/factory.h"
#include "layers/rope.h"
#include "tests/layers/layer_test_util.h"

namespace moh {
namespace {

using layer_test::input64;

void expect_rope_case(const RotaryEmbedding& rope, const layer_test::Fixture& f, const std::string& name,
                      const Tensor& positions) {
  ag::Variable x(f[name + ".x"], true);
  ag::Variable y = rope.forward(x, positions);
  nn_test::expect_close(y.data(), f[name + ".out"], 1e-5, name + " out");
  ag::backward(y, f[name + ".grad_out"]);
  nn_test::expect_close(x.grad(), f[name + ".grad.x"], 1e-5, name + " grad x");
}

TEST(LayerRope, MatchesHfLlama) {
  layer_test::Fixture f = layer_test::load_fixture("rope");
  RotaryEmbedding rope({.head_dim = 8, .max_positions = 16});
  expect_rope_case(rope, f, "shared", Tensor());
  expect_rope_case(rope, f, "shared", f["shared.positions"]);  // [T], the same positions
  RotaryEmbedding llama3({.head_dim = 8, .max_positions = 13, .theta = 500000.0});
  expect_rope_case(llama3, f, "per_sample", f["per_sample.positions"]);
}

TEST(LayerRope, TablesFollowTheFormula) {
  RotaryEmbedding rope({.head_dim = 6, .max_positions = 50, .theta = 100.0, .dtype = DType::Float64});
  ASSERT_EQ(rope.cos().shape(), Shape({50, 3}));
  std::vector<double> c = rope.cos().to_vector<double>(), s = rope.sin().to_vector<double>();
  for (int64_t p = 0; p < 50; ++p)
    for (int64_t i = 0; i < 3; ++i) {
      const double angle = double(p) * std::pow(100.0, -2.0 * double(i) / 6.0);
      EXPECT_NEAR(c[size_t(p * 3 + i)], std::cos(angle), 1e-15);
      EXPECT_NEAR(s[size_t(p * 3 + i)], std::sin(angle), 1e-15);
    }
}

TEST(LayerRope, PositionZeroIsIdentityAndScoresDependOnDistance) {
  RotaryEmbedding rope({.head_dim = 4, .max_positions = 32, .dtype = DType::Float64});
  ag::Variable q = input64({1, 1, 1, 4}, 1, false), k = input64({1, 1, 1, 4}, 2, false);
  auto at = [&](const ag::Variable& v, int64_t pos) {
    return rope.forward(v, from_vector<int64_t>({pos}, {1})).data().to_vector<double>();
  };
  nn_test::expect_close(from_vector(at(q, 0), {4}), q.data().to_vector<double>(), 1e-15, "position 0");
  auto score = [&](int64_t m, int64_t n) { return nn_test::dot(at(q, m), at(k, n)); };
  EXPECT_NEAR(score(5, 2), score(20, 17), 1e-12);
  EXPECT_NEAR(score(0, 9), score(11, 20), 1e-12);
  EXPECT_GT(std::abs(score(5, 2) - score(5, 3)), 1e-6);
  // Rotations keep the norm of each (x1[i], x2[i]) pair.
  std::vector<double> x = q.data().to_vector<double>(), y = at(q, 7);
  for (size_t i = 0; i < 2; ++i)
    EXPECT_NEAR(x[i] * x[i] + x[i + 2] * x[i + 2], y[i] * y[i] + y[i + 2] * y[i + 2], 1e-14);
}

TEST(LayerRope, Gradcheck) {
  RotaryEmbedding rope({.head_dim = 6, .max_positions = 10, .theta = 50.0, .dtype = DType::Float64});
  auto check = [&](const ag::Variable& x, const Tensor& positions) {
    EXPECT_GRADCHECK([&](const std::vector<ag::Variable>& v) { return rope.forward(v[0], positions); }, {x});
  };
  check(input64({2, 2, 3, 6}, 3), Tensor());
  check(ag::Variable(input64({2, 3, 2, 6}, 4).data().transpose(1, 2), true),
        from_vector<int64_t>({4, 9, 1}, {3}));
  check(input64({2, 2, 3, 6}, 5), from_vector<int64_t>({0, 1, 2, 9, 3, 3}, {2, 3}));
  check(input64({3, 6}, 6), Tensor());  // [T, Dh] without batch or head dims
}

TEST(LayerRope, EmptySequence) {
  RotaryEmbedding rope({.head_dim = 4, .max_positions = 8});
  ag::Variable x(zeros({1, 2, 0, 4}), true);
  ag::Variable y = rope.forward(x);
  EXPECT_EQ(y.shape(), Shape({1, 2, 0, 4}));
  ag::backward(y, zeros({1, 2, 0, 4}));
  EXPECT_EQ(x.grad().shape(), Shape({1, 2, 0, 4}));
}

TEST(LayerRope, ErrorsNameTheLayer) {
  EXPECT_ERROR_MENTIONS(RotaryEmbedding({.head_dim = 5, .max_positions = 8}), "RotaryEmbedding");
  EXPECT_ERROR_MENTIONS(RotaryEmbedding({.head_dim = 4, .max_positions = 0}), "RotaryEmbedding");
  EXPECT_ERROR_MENTIONS(RotaryEmbedding({.head_dim = 4, .max_positions = 8, .theta = 0}), "RotaryEmbedding");
  RotaryEmbedding rope({.head_dim = 4, .max_positions = 8});
  const char* label = "RotaryEmbedding(head_dim=4, max_positions=8";
  EXPECT_ERROR_MENTIONS(rope.forward(ag::Variable(zeros({1, 2, 3, 6}))), label);
  EXPECT_ERROR_MENTIONS(rope.forward(ag::Variable(zeros({1, 2, 3, 4}, DType::Float64))), label);
  EXPECT_ERROR_MENTIONS(rope.forward(ag::Variable(zeros({1, 1, 9, 4}))), "exceeds max_positions");
  EXPECT_ERROR_MENTIONS(rope.forward(ag::Variable(zeros({1, 1, 2, 4})), from_vector<int64_t>({0, 8}, {2})),
                        label);
  EXPECT_ERROR_MENTIONS(rope.forward(ag::Variable(zeros({1, 1, 2, 4})), from_vector<int64_t>({0, 1, 2}, {3})),
                        label);
  EXPECT_ERROR_MENTIONS(
      rope.forward(ag::Variable(zeros({2, 1, 2, 4})), from_vector<int64_t>({0, 1, 2, 3}, {4, 1})), label);
  EXPECT_ERROR_MENTIONS(rope.forward(ag::Variable(zeros({1, 1, 2, 4})), from_vector<int32_t>({0, 1}, {2})),
                        label);
  EXPECT_ERROR_MENTIONS(apply_rope(ag::Variable(zeros({2, 4})), zeros({3, 2}), zeros({3, 2})), "apply_rope");
  EXPECT_ERROR_MENTIONS(apply_rope(ag::Variable(zeros({1, 2, 4})), zeros({1, 2, 2}), zeros({1, 2, 2})),
                        "apply_rope: per-sample tables");
  EXPECT_ERROR_MENTIONS(apply_rope(ag::Variable(zeros({2, 3})), zeros({2, 1}), zeros({2, 1})),
                        "even head dim");
  EXPECT_ERROR_MENTIONS(apply_rope(ag::Variable(zeros({2, 4})), zeros({2, 2}), zeros({2, 2}, DType::Float64)),
                        "apply_rope");
}

}  // namespace
}  // namespace moh
