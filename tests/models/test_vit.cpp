// VisionTransformer: shapes of both poolings, preset parameter counts against timm's published
// numbers, timm state-dict names, per-block MoH lists and balance losses, eval determinism, the
// sin-cos buffer, a float64 gradcheck and a golden forward against the PyTorch model of
// tests/reference/make_vit_fixture.py (vit_small_forward.safetensors).
#include <gtest/gtest.h>

#include <set>

#include "core/factory.h"
#include "core/io/safetensors.h"
#include "layers/position.h"
#include "models/vit/vit.h"
#include "tests/layers/layer_test_util.h"
#include "tests/test_paths.h"

namespace moh {
namespace {

VitOptions small_options(DType dtype = DType::Float32) {
  VitOptions o;
  o.img_size = 8, o.patch_size = 4, o.in_chans = 3, o.num_classes = 5;
  o.dim = 16, o.depth = 2, o.heads = 4, o.dtype = dtype;
  return o;
}

ag::Variable images(const VitOptions& o, int64_t batch, uint64_t seed) {
  Generator gen(seed);
  return ag::Variable(uniform({batch, o.in_chans, o.img_size, o.img_size}, -1.0, 1.0, gen, o.dtype));
}

std::set<std::string> state_names(const Module& m) {
  std::set<std::string> names;
  for (const auto& [name, _] : m.state_dict()) names.insert(name);
  return names;
}

TEST(Vit, ClassTokenOutputShape) {
  Generator gen(1);
  VisionTransformer model(small_options(), gen);
  EXPECT_EQ(model.num_tokens(), 5);
  VitOutput out = model.forward(images(model.options(), 3, 2));
  EXPECT_EQ(out.logits.shape(), (Shape{3, 5}));
  EXPECT_TRUE(out.balance_losses.empty());
}

TEST(Vit, DeclaresItsPositionTableAndClassTokenFreeOfWeightDecay) {
  Generator gen(1);
  VitOptions o = small_options();
  EXPECT_EQ(VisionTransformer(o, gen).no_weight_decay_names(), (std::vector<std::string>{"pos_embed", "cls_token"}));
  o.class_token = false;
  o.pos_embed = VitOptions::PosEmbed::SinCos;  // a buffer: nothing to exempt
  EXPECT_TRUE(VisionTransformer(o, gen).no_weight_decay_names().empty());
}

TEST(Vit, AveragePoolUsesFcNormAndNoClassToken) {
  VitOptions o = small_options();
  o.class_token = false;
  Generator gen(1);
  VisionTransformer model(o, gen);
  const auto names = state_names(model);
  EXPECT_TRUE(names.count("fc_norm.weight"));
  EXPECT_FALSE(names.count("norm.weight"));
  EXPECT_FALSE(names.count("cls_token"));
  EXPECT_EQ(model.state_dict().at("pos_embed").shape(), (Shape{1, 4, 16}));
  EXPECT_EQ(model.forward(images(o, 2, 2)).logits.shape(), (Shape{2, 5}));
  o.num_classes = 0;  // no head: pooled features
  VisionTransformer features(o, gen);
  EXPECT_FALSE(state_names(features).count("head.weight"));
  EXPECT_EQ(features.forward(images(o, 2, 2)).logits.shape(), (Shape{2, 16}));
}

TEST(Vit, PresetParameterCountsMatchTimm) {
  Generator gen(0);
  EXPECT_EQ(VisionTransformer(vit_preset("deit_tiny"), gen).num_parameters(), 5717416);
  EXPECT_EQ(VisionTransformer(vit_preset("deit_small"), gen).num_parameters(), 22050664);
  EXPECT_EQ(VisionTransformer(vit_preset("deit_base"), gen).num_parameters(), 86567656);
  VitOptions tiny = vit_preset("tiny");
  EXPECT_EQ(tiny.img_size, 28);
  EXPECT_EQ(tiny.in_chans, 1);
  EXPECT_EQ(tiny.num_classes, 10);
  EXPECT_EQ(VisionTransformer(tiny, gen).num_parameters(), 804874);
  EXPECT_ERROR_MENTIONS(vit_preset("vit_huge"), "vit_huge");
}

TEST(Vit, StateDictNamesMatchTimm) {
  Generator gen(1);
  VisionTransformer model(small_options(), gen);
  const auto names = state_names(model);
  for (const char* name : {"patch_embed.proj.weight", "patch_embed.proj.bias", "cls_token", "pos_embed",
                           "blocks.0.norm1.weight", "blocks.0.attn.qkv.weight", "blocks.0.attn.qkv.bias",
                           "blocks.0.attn.proj.weight", "blocks.0.norm2.bias", "blocks.0.mlp.fc1.weight",
                           "blocks.1.mlp.fc2.bias", "norm.weight", "norm.bias", "head.weight", "head.bias"})
    EXPECT_TRUE(names.count(name)) << name;
  EXPECT_EQ(model.state_dict().at("cls_token").shape(), (Shape{1, 1, 16}));
  EXPECT_EQ(model.state_dict().at("pos_embed").shape(), (Shape{1, 5, 16}));
  EXPECT_EQ(model.state_dict().at("blocks.1.mlp.fc1.weight").shape(), (Shape{64, 16}));
}

TEST(Vit, InitFollowsTimm) {
  Generator gen(3);
  VisionTransformer model(vit_preset("deit_tiny"), gen);
  const StateDict s = model.state_dict();
  for (const char* name : {"pos_embed", "blocks.0.attn.qkv.weight", "blocks.5.mlp.fc1.weight"}) {
    const auto v = s.at(name).to_vector<double>();
    double sq = 0, peak = 0;
    for (double x : v) sq += x * x, peak = std::max(peak, std::abs(x));
    EXPECT_NEAR(std::sqrt(sq / double(v.size())), 0.0176, 0.001) << name;  // std of N(0, 0.02) cut at 2 std
    EXPECT_LE(peak, 0.04) << name;
  }
  for (double b : s.at("blocks.0.attn.qkv.bias").to_vector<double>()) ASSERT_EQ(b, 0.0);
  for (double w : s.at("norm.weight").to_vector<double>()) ASSERT_EQ(w, 1.0);
}

TEST(Vit, MoHListsBroadcastAndPerBlock) {
  VitOptions o = small_options();
  o.depth = 3;
  o.attention.shared_heads = {2};
  o.attention.routed_topk = {1};
  Generator gen(1);
  VisionTransformer broadcast(o, gen);
  for (const auto& block : broadcast.blocks) {
    auto* moh = dynamic_cast<MoHAttention*>(block->attn.get());
    ASSERT_NE(moh, nullptr);
    EXPECT_EQ(moh->moh_options().shared_heads, 2);
    EXPECT_EQ(moh->moh_options().routed_topk, 1);
  }
  o.attention.shared_heads = {4, 1, 2};
  o.attention.routed_topk = {0, 2, 1};
  VisionTransformer per_block(o, gen);
  const auto names = state_names(per_block);
  EXPECT_TRUE(names.count("blocks.0.attn.shared_gate.weight"));  // all-shared, gated
  EXPECT_FALSE(names.count("blocks.0.attn.router.weight"));
  EXPECT_TRUE(names.count("blocks.1.attn.router.weight"));
  EXPECT_EQ(per_block.state_dict().at("blocks.2.attn.router.weight").shape(), (Shape{2, 16}));
  EXPECT_EQ(dynamic_cast<MoHAttention&>(*per_block.blocks[1]->attn).moh_options().routed_topk, 2);

  o.attention.routed_topk = {0, 2};
  EXPECT_ERROR_MENTIONS(VisionTransformer(o, gen), "routed_topk");
  o.attention.routed_topk = {};
  EXPECT_ERROR_MENTIONS(VisionTransformer(o, gen), "routed_topk");
  o.attention.routed_topk = {1};
  o.attention.shared_heads = {1, 1, 1, 1};
  EXPECT_ERROR_MENTIONS(VisionTransformer(o, gen), "shared_heads");
  o.attention.shared_heads = {4};  // no routed heads left for K = 1
  EXPECT_ERROR_MENTIONS(VisionTransformer(o, gen), "routed_topk");
}

TEST(Vit, BalanceLossesOnlyForRoutedBlocksInTraining) {
  VitOptions o = small_options();
  o.depth = 3;
  o.attention.shared_heads = {4, 1, 0};
  o.attention.routed_topk = {0, 2, 1};
  for (MoHExecution execution : {MoHExecution::Dense, MoHExecution::Sparse}) {
    o.attention.execution = execution;
    Generator gen(5);
    VisionTransformer model(o, gen);
    const ag::Variable x = images(o, 2, 6);
    VitOutput train = model.forward(x);
    ASSERT_EQ(train.balance_losses.size(), 2u);
    for (const auto& loss : train.balance_losses) {
      EXPECT_EQ(loss.dim(), 0);
      EXPECT_GT(loss.data().item<double>(), 0.0);
    }
    model.eval();
    EXPECT_TRUE(model.forward(x).balance_losses.empty());
  }
}

TEST(Vit, EvalIsDeterministicAndTrainingDropsPaths) {
  VitOptions o = small_options();
  o.depth = 3;
  o.drop_path = 0.9;
  Generator gen(1);
  VisionTransformer model(o, gen, std::make_shared<Generator>(7));
  EXPECT_EQ(model.blocks[0]->drop_path->p(), 0.0);
  EXPECT_DOUBLE_EQ(model.blocks[1]->drop_path->p(), 0.45);
  EXPECT_DOUBLE_EQ(model.blocks[2]->drop_path->p(), 0.9);
  const ag::Variable x = images(o, 8, 2);
  const auto a = model.forward(x).logits.data().to_vector<float>();
  EXPECT_NE(a, model.forward(x).logits.data().to_vector<float>());
  model.eval();
  const auto b = model.forward(x).logits.data().to_vector<float>();
  EXPECT_EQ(b, model.forward(x).logits.data().to_vector<float>());
  // drop_path > 0 without a dropout generator is rejected (by DropPath).
  EXPECT_THROW(VisionTransformer(o, gen), Error);
}

TEST(Vit, SinCosPositionEmbeddingIsAFixedBuffer) {
  VitOptions o = small_options();
  o.pos_embed = VitOptions::PosEmbed::SinCos;
  Generator gen(1);
  VisionTransformer model(o, gen);
  for (const auto& [name, _] : model.named_parameters()) EXPECT_NE(name, "pos_embed");
  const Tensor table = model.state_dict().at("pos_embed");
  EXPECT_EQ(table.shape(), (Shape{1, 5, 16}));
  EXPECT_EQ(table.to_vector<double>(), sincos_table_2d(16, 2, 2, 1).to_vector<double>());
  o.dim = 18, o.heads = 3;
  EXPECT_ERROR_MENTIONS(VisionTransformer(o, gen), "divisible by 4");
}

TEST(Vit, BadInputsAndOptionsThrow) {
  Generator gen(1);
  VisionTransformer model(small_options(), gen);
  VitOptions wrong = small_options();
  wrong.in_chans = 1;
  EXPECT_ERROR_MENTIONS(model.forward(images(wrong, 2, 1)), "VisionTransformer");
  wrong = small_options();
  wrong.img_size = 12;
  EXPECT_THROW(model.forward(images(wrong, 2, 1)), Error);
  wrong.img_size = 10;
  EXPECT_ERROR_MENTIONS(VisionTransformer(wrong, gen), "patch_size");
  wrong = small_options();
  wrong.heads = 3;
  EXPECT_ERROR_MENTIONS(VisionTransformer(wrong, gen), "heads");
}

ag::Variable logits_of(const VisionTransformer& model, const ag::Variable& x) { return model.forward(x).logits; }

TEST(Vit, GradcheckFloat64) {
  VitOptions o;
  o.img_size = 8, o.patch_size = 4, o.in_chans = 2, o.num_classes = 3;
  o.dim = 8, o.depth = 1, o.heads = 2, o.dtype = DType::Float64;
  Generator gen(11);
  VisionTransformer mha(o, gen);
  const ag::Variable x = layer_test::input64({2, 2, 8, 8}, 12);
  EXPECT_MODULE_GRADCHECK(mha, [&](const ag::Variable& in) { return logits_of(mha, in); }, x);
  // Average pooling with an all-shared gated MoH block (smooth: no top-k selection).
  o.class_token = false;
  o.attention.shared_heads = {2};
  o.attention.routed_topk = {0};
  VisionTransformer moh(o, gen);
  EXPECT_MODULE_GRADCHECK(moh, [&](const ag::Variable& in) { return logits_of(moh, in); }, x);
}

TEST(Vit, GoldenForwardMatchesTorch) {
  const std::string path = MOH_TEST_PATH(MOH_FIXTURE_DIR) + "/vit_small_forward.safetensors";
  const auto f = load_safetensors(path);
  const auto meta = load_safetensors_metadata(path);
  ASSERT_EQ(meta.at("generator"), "tests/reference/make_vit_fixture.py");
  StateDict state;
  for (const auto& [key, t] : f)
    if (key.starts_with("state.")) state[key.substr(6)] = t;
  for (auto [dtype, rtol] : {std::pair{DType::Float32, 1e-5}, std::pair{DType::Float64, 1e-10}}) {
    VitOptions o;
    o.img_size = std::stoll(meta.at("img_size")), o.patch_size = std::stoll(meta.at("patch_size"));
    o.in_chans = std::stoll(meta.at("in_chans")), o.num_classes = std::stoll(meta.at("num_classes"));
    o.dim = std::stoll(meta.at("dim")), o.depth = std::stoll(meta.at("depth")), o.heads = std::stoll(meta.at("heads"));
    o.mlp_ratio = std::stod(meta.at("mlp_ratio"));
    o.dtype = dtype;
    Generator gen(1);
    VisionTransformer model(o, gen);
    model.load_state_dict(state);  // strict: every name is timm's
    model.eval();
    const Tensor logits = model.forward(ag::Variable(f.at("x").to(dtype))).logits.data();
    nn_test::expect_close(logits, f.at("logits"), rtol, dtype == DType::Float32 ? "float32" : "float64");
  }
}

}  // namespace
}  // namespace moh
