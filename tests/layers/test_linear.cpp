// Linear and the fused linear node: PyTorch golden values, float64 gradchecks (batched, strided,
// 1-D and bias-free inputs), a naive double reference, one tape node per call, init ranges,
// PyTorch parameter names and the errors that name the layer.
#include <gtest/gtest.h>

#include <cmath>

#include "core/factory.h"
#include "layers/linear.h"
#include "tests/layers/layer_test_util.h"

namespace moh {
namespace {

using layer_test::input64;

LinearOptions options64(int64_t in, int64_t out, bool bias = true) {
  return {.in_features = in, .out_features = out, .bias = bias, .dtype = DType::Float64};
}

TEST(LayerLinear, MatchesTorch) {
  layer_test::Fixture f = layer_test::load_fixture("linear");
  Generator gen(1);
  Linear with_bias({.in_features = 6, .out_features = 5}, gen);
  layer_test::expect_matches_torch(
      with_bias, [&](const ag::Variable& x) { return with_bias.forward(x); }, f, "bias");
  Linear no_bias({.in_features = 6, .out_features = 5, .bias = false}, gen);
  layer_test::expect_matches_torch(
      no_bias, [&](const ag::Variable& x) { return no_bias.forward(x); }, f, "nobias");
}

TEST(LayerLinear, MatchesNaiveLoopOnStridedInput) {
  Generator gen(2);
  Linear lin(options64(4, 3), gen);
  Generator bias_gen(3);
  Tensor b = lin.bias().data();
  b.copy_(uniform({3}, -1, 1, bias_gen, DType::Float64));
  ag::Variable x(input64({2, 4, 5}, 4).data().transpose(1, 2));  // [2, 5, 4], not contiguous
  ag::Variable y = lin.forward(x);
  ASSERT_EQ(y.shape(), Shape({2, 5, 3}));
  std::vector<double> xs = x.data().to_vector<double>(), w = lin.weight().data().to_vector<double>(),
                      bs = b.to_vector<double>(), expected;
  for (int64_t r = 0; r < 10; ++r)
    for (int64_t o = 0; o < 3; ++o) {
      double acc = bs[size_t(o)];
      for (int64_t i = 0; i < 4; ++i) acc += xs[size_t(r * 4 + i)] * w[size_t(o * 4 + i)];
      expected.push_back(acc);
    }
  nn_test::expect_close(y.data(), expected, 1e-12, "linear");
}

TEST(LayerLinear, Gradcheck) {
  Generator gen(5);
  Linear lin(options64(4, 3), gen);
  Tensor b = lin.bias().data();
  fill_(b, 0.25);
  auto fwd = [&](const ag::Variable& x) { return lin.forward(x); };
  EXPECT_MODULE_GRADCHECK(lin, fwd, input64({2, 3, 4}, 6));
  EXPECT_MODULE_GRADCHECK(lin, fwd, ag::Variable(input64({4, 5}, 7).data().t(), true));  // strided [5, 4]
  EXPECT_MODULE_GRADCHECK(lin, fwd, input64({4}, 8));                                    // 1-D -> [3]
  Linear no_bias(options64(3, 2, false), gen);
  EXPECT_MODULE_GRADCHECK(
      no_bias, [&](const ag::Variable& x) { return no_bias.forward(x); }, input64({5, 3}, 9));
  // Only the parameters (a data input that does not require grad).
  EXPECT_MODULE_GRADCHECK(lin, fwd, input64({3, 4}, 10, false));
}

TEST(LayerLinear, FusedNodeGradcheckAndTapeSize) {
  EXPECT_GRADCHECK([](const std::vector<ag::Variable>& in) { return linear(in[0], in[1], in[2]); },
                   {input64({2, 2, 3}, 11), input64({4, 3}, 12), input64({4}, 13)});
  // Weight and bias as views: rows [1, 3) of a fused projection, and a transposed [in, out] store.
  EXPECT_GRADCHECK(
      [](const std::vector<ag::Variable>& in) {
        return linear(in[0], ag::narrow(in[1], 0, 1, 2), ag::narrow(in[2], 0, 1, 2));
      },
      {input64({3, 3}, 14), input64({4, 3}, 15), input64({4}, 16)});
  EXPECT_GRADCHECK(
      [](const std::vector<ag::Variable>& in) {
        return linear(in[0], ag::transpose(in[1], 0, 1), ag::Variable());
      },
      {input64({2, 3}, 17), input64({3, 5}, 18)});
  ag::clear_tape();
  Generator gen(19);
  Linear lin({.in_features = 8, .out_features = 6}, gen);
  ag::Variable y = lin.forward(ag::Variable(zeros({2, 3, 8}), true));
  EXPECT_EQ(ag::tape_size(), 1u);  // flatten, GEMM, bias and reshape are one node
  EXPECT_EQ(y.shape(), Shape({2, 3, 6}));
  ag::clear_tape();
}

TEST(LayerLinear, EmptyBatch) {
  Generator gen(15);
  Linear lin({.in_features = 4, .out_features = 3}, gen);
  ag::Variable x(zeros({0, 4}), true);
  ag::Variable y = lin.forward(x);
  ASSERT_EQ(y.shape(), Shape({0, 3}));
  ag::backward(y, zeros({0, 3}));
  EXPECT_EQ(lin.weight().grad().to_vector<float>(), std::vector<float>(12, 0.0f));
  EXPECT_EQ(lin.bias().grad().to_vector<float>(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(x.grad().shape(), Shape({0, 4}));
}

TEST(LayerLinear, NamesShapesAndInit) {
  Generator gen(16);
  Linear lin({.in_features = 40, .out_features = 30}, gen);
  auto named = lin.named_parameters();
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named[0].first, "weight");
  EXPECT_EQ(named[0].second.shape(), Shape({30, 40}));
  EXPECT_EQ(named[0].second.dtype(), DType::Float32);
  EXPECT_EQ(named[1].first, "bias");
  EXPECT_EQ(lin.bias().data().to_vector<float>(), std::vector<float>(30, 0.0f));
  const double bound = std::sqrt(6.0 / 70.0);
  double max_abs = 0;
  for (float v : lin.weight().data().to_vector<float>()) max_abs = std::max(max_abs, std::fabs(double(v)));
  EXPECT_LE(max_abs, bound);
  EXPECT_GT(max_abs, 0.9 * bound);

  Linear trunc({.in_features = 40, .out_features = 30, .init = WeightInit::TruncNormal, .init_std = 0.02},
               gen);
  max_abs = 0;
  for (float v : trunc.weight().data().to_vector<float>()) max_abs = std::max(max_abs, std::fabs(double(v)));
  EXPECT_LE(max_abs, 0.04 + 1e-7);
  EXPECT_GT(max_abs, 0.03);

  // Untruncated: std 0.02 (a truncated draw has 0.0176) and values beyond 2 std.
  Linear normal({.in_features = 100, .out_features = 100, .init = WeightInit::Normal, .init_std = 0.02}, gen);
  double sq = 0;
  max_abs = 0;
  for (float v : normal.weight().data().to_vector<float>())
    sq += double(v) * double(v), max_abs = std::max(max_abs, std::fabs(double(v)));
  EXPECT_NEAR(std::sqrt(sq / 1e4), 0.02, 0.0005);
  EXPECT_GT(max_abs, 0.05);

  Generator a(7), b(7);
  EXPECT_EQ(Linear({.in_features = 3, .out_features = 2}, a).weight().data().to_vector<float>(),
            Linear({.in_features = 3, .out_features = 2}, b).weight().data().to_vector<float>());
  EXPECT_NE(lin.summary().find("Linear(in=40, out=30, bias)"), std::string::npos) << lin.summary();
}

TEST(LayerLinear, ErrorsNameTheLayer) {
  Generator gen(17);
  Linear lin({.in_features = 4, .out_features = 3}, gen);
  EXPECT_ERROR_MENTIONS(lin.forward(ag::Variable(zeros({2, 5}))), "Linear(in=4, out=3");
  EXPECT_ERROR_MENTIONS(lin.forward(ag::Variable(zeros({}))), "Linear(in=4, out=3");
  EXPECT_ERROR_MENTIONS(lin.forward(ag::Variable(zeros({2, 4}, DType::Float64))), "float32 parameters");
  EXPECT_ERROR_MENTIONS(lin.forward(ag::Variable()), "undefined");
  EXPECT_ERROR_MENTIONS(Linear({.in_features = 0, .out_features = 3}, gen), "Linear");
  EXPECT_ERROR_MENTIONS(
      linear(ag::Variable(zeros({2, 4})), ag::Variable(zeros({3, 4})), ag::Variable(zeros({4}))),
      "linear: bias");
  EXPECT_ERROR_MENTIONS(linear(ag::Variable(zeros({2, 4})), ag::Variable(zeros({12})), ag::Variable()),
                        "linear");
}

}  // namespace
}  // namespace moh
