// Embedding module: PyTorch golden values (repeated indices accumulate), float64 gradcheck of the
// weight, init statistics, names and errors (dtype, out-of-range index) naming the layer.
#include <gtest/gtest.h>

#include <cmath>

#include "core/factory.h"
#include "layers/embedding.h"
#include "tests/layers/layer_test_util.h"

namespace moh {
namespace {

TEST(LayerEmbedding, MatchesTorch) {
  layer_test::Fixture f = layer_test::load_fixture("embedding");
  Generator gen(1);
  Embedding emb({.num_embeddings = 10, .embedding_dim = 4}, gen);
  emb.load_state_dict(f.state("embedding"));
  ag::Variable y = emb.forward(f["embedding.indices"]);
  nn_test::expect_close(y.data(), f["embedding.out"], 1e-6, "embedding out");
  ag::backward(y, f["embedding.grad_out"]);
  nn_test::expect_close(emb.weight().grad(), f["embedding.grad.weight"], 1e-5, "embedding grad weight");
}

TEST(LayerEmbedding, Gradcheck) {
  Generator gen(2);
  Embedding emb({.num_embeddings = 5, .embedding_dim = 3, .dtype = DType::Float64}, gen);
  Tensor indices = from_vector<int64_t>({4, 0, 4, 2, 2, 2}, {2, 3});
  // The index input carries no gradient: x is a dummy that does not require grad.
  EXPECT_MODULE_GRADCHECK(
      emb, [&](const ag::Variable&) { return emb.forward(indices); },
      ag::Variable(zeros({1}, DType::Float64)));
}

TEST(LayerEmbedding, InitNamesAndLookup) {
  Generator gen(3);
  Embedding emb({.num_embeddings = 100, .embedding_dim = 50}, gen);
  ASSERT_EQ(emb.named_parameters().size(), 1u);
  EXPECT_EQ(emb.named_parameters()[0].first, "weight");
  EXPECT_EQ(emb.weight().shape(), Shape({100, 50}));
  std::vector<float> w = emb.weight().data().to_vector<float>();
  double sq = 0;
  for (float v : w) sq += double(v) * v;
  EXPECT_NEAR(std::sqrt(sq / double(w.size())), 0.02, 0.001);
  ag::Variable y = emb.forward(from_vector<int64_t>({7, 7, 99}, {3}));
  ASSERT_EQ(y.shape(), Shape({3, 50}));
  std::vector<float> out = y.data().to_vector<float>();
  for (int64_t d = 0; d < 50; ++d) {
    EXPECT_EQ(out[size_t(d)], w[size_t(7 * 50 + d)]);
    EXPECT_EQ(out[size_t(100 + d)], w[size_t(99 * 50 + d)]);
  }
  EXPECT_NE(emb.summary().find("Embedding(100, 50)"), std::string::npos);
}

TEST(LayerEmbedding, ErrorsNameTheLayer) {
  Generator gen(4);
  Embedding emb({.num_embeddings = 5, .embedding_dim = 2}, gen);
  EXPECT_ERROR_MENTIONS(emb.forward(from_vector<int64_t>({1, 5}, {2})), "Embedding(5, 2)");
  EXPECT_ERROR_MENTIONS(emb.forward(from_vector<int64_t>({-1}, {1})), "Embedding(5, 2)");
  EXPECT_ERROR_MENTIONS(emb.forward(from_vector<int32_t>({1}, {1})), "Embedding(5, 2): expected int64");
  EXPECT_ERROR_MENTIONS(emb.forward(Tensor()), "Embedding(5, 2)");
  EXPECT_ERROR_MENTIONS(Embedding({.num_embeddings = 0, .embedding_dim = 2}, gen), "Embedding");
}

}  // namespace
}  // namespace moh
