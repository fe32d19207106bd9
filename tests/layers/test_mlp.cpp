// Mlp (timm) and SwiGLU (LLaMA): PyTorch golden values with checkpoint names, float64 gradchecks
// of every parameter, default sizes, dropout following train/eval, and errors naming the block.
#include <gtest/gtest.h>

#include <memory>

#include "core/factory.h"
#include "layers/mlp.h"
#include "tests/layers/layer_test_util.h"

namespace moh {
namespace {

using layer_test::input64;

std::vector<std::string> names(const Module& m) {
  std::vector<std::string> out;
  for (auto& [name, _] : m.named_parameters()) out.push_back(name);
  return out;
}

TEST(LayerMlp, MatchesTimm) {
  layer_test::Fixture f = layer_test::load_fixture("mlp");
  Generator gen(1);
  Mlp mlp({.in_features = 6, .hidden_features = 12, .out_features = 5}, gen);
  layer_test::expect_matches_torch(
      mlp, [&](const ag::Variable& x) { return mlp.forward(x); }, f, "mlp");
  Mlp tanh({.in_features = 6, .hidden_features = 12, .act = Activation::GeluTanh}, gen);
  layer_test::expect_matches_torch(
      tanh, [&](const ag::Variable& x) { return tanh.forward(x); }, f, "mlp_tanh");
}

TEST(LayerSwiGLU, MatchesLlama) {
  layer_test::Fixture f = layer_test::load_fixture("mlp");
  Generator gen(2);
  SwiGLU ffn({.in_features = 6, .hidden_features = 10, .out_features = 7}, gen);
  EXPECT_EQ(names(ffn), (std::vector<std::string>{"w1.weight", "w2.weight", "w3.weight"}));
  layer_test::expect_matches_torch(
      ffn, [&](const ag::Variable& x) { return ffn.forward(x); }, f, "swiglu");
}

TEST(LayerMlp, Gradcheck) {
  Generator gen(3);
  for (Activation act : {Activation::Gelu, Activation::GeluTanh, Activation::Silu, Activation::Relu}) {
    Mlp mlp({.in_features = 3, .hidden_features = 5, .out_features = 2, .act = act, .dtype = DType::Float64},
            gen);
    for (auto& p : mlp.parameters()) {  // non-zero biases
      Tensor d = p.data();
      if (p.dim() == 1) d.copy_(uniform(p.shape(), -0.5, 0.5, gen, DType::Float64));
    }
    SCOPED_TRACE(activation_name(act));
    EXPECT_MODULE_GRADCHECK(
        mlp, [&](const ag::Variable& x) { return mlp.forward(x); }, input64({2, 2, 3}, 4));
  }
}

TEST(LayerSwiGLU, Gradcheck) {
  Generator gen(5);
  SwiGLU ffn({.in_features = 4, .hidden_features = 6, .dtype = DType::Float64}, gen);
  EXPECT_MODULE_GRADCHECK(
      ffn, [&](const ag::Variable& x) { return ffn.forward(x); },
      ag::Variable(input64({4, 3}, 6).data().t(), true));
  SwiGLU biased(
      {.in_features = 3, .hidden_features = 4, .out_features = 2, .bias = true, .dtype = DType::Float64},
      gen);
  EXPECT_EQ(names(biased).size(), 6u);
  EXPECT_MODULE_GRADCHECK(
      biased, [&](const ag::Variable& x) { return biased.forward(x); }, input64({5, 3}, 7));
}

TEST(LayerMlp, DefaultsNamesAndDropout) {
  Generator gen(8);
  auto dropout_gen = std::make_shared<Generator>(9);
  Mlp mlp({.in_features = 4, .drop = 0.5}, gen, dropout_gen);
  EXPECT_EQ(names(mlp), (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(mlp.fc1->weight().shape(), Shape({4, 4}));  // hidden and out default to in
  EXPECT_EQ(mlp.fc2->weight().shape(), Shape({4, 4}));
  EXPECT_NE(mlp.summary().find("Mlp(in=4, hidden=4, out=4, gelu, drop=0.5)"), std::string::npos)
      << mlp.summary();
  ag::Variable x(ones({64, 4}));
  mlp.eval();
  Tensor a = mlp.forward(x).data(), b = mlp.forward(x).data();
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  EXPECT_EQ(dropout_gen->offset(), 0u);
  mlp.train();
  EXPECT_NE(mlp.forward(x).data().to_vector<float>(), a.to_vector<float>());
  EXPECT_GT(dropout_gen->offset(), 0u);
  EXPECT_ERROR_MENTIONS(Mlp({.in_features = 4, .drop = 0.5}, gen), "p > 0 needs a generator");

  SwiGLU ffn({.in_features = 4, .hidden_features = 8}, gen);
  EXPECT_EQ(ffn.w1->weight().shape(), Shape({8, 4}));
  EXPECT_EQ(ffn.w2->weight().shape(), Shape({4, 8}));
  EXPECT_EQ(ffn.w3->weight().shape(), Shape({8, 4}));
}

TEST(LayerMlp, ErrorsNameTheBlock) {
  Generator gen(10);
  Mlp mlp({.in_features = 4, .hidden_features = 8, .out_features = 2}, gen);
  EXPECT_ERROR_MENTIONS(mlp.forward(ag::Variable(zeros({3, 5}))), "Mlp(in=4, hidden=8, out=2");
  EXPECT_ERROR_MENTIONS(mlp.forward(ag::Variable(zeros({3, 4}, DType::Float64))), "Mlp(in=4");
  EXPECT_ERROR_MENTIONS(Mlp({.in_features = 0}, gen), "Mlp");
  EXPECT_ERROR_MENTIONS(Mlp({.in_features = 4, .hidden_features = -1}, gen), "Mlp");
  SwiGLU ffn({.in_features = 4, .hidden_features = 8}, gen);
  EXPECT_ERROR_MENTIONS(ffn.forward(ag::Variable(zeros({8}))), "SwiGLU(in=4, hidden=8, out=4)");
  EXPECT_ERROR_MENTIONS(SwiGLU({.in_features = -2}, gen), "SwiGLU");
}

}  // namespace
}  // namespace moh
