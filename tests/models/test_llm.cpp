// LanguageModel (LLaMA and GPT-2 styles): shapes and parameter names, preset sizes (GPT-2 small's
// published 124,439,808), option and input checks, tied embeddings and their summed gradient, MoH
// blocks from the spec, causality, GPT-2 init, FLOPs, a float64 gradcheck of tiny models, and logits and
// every parameter gradient against the PyTorch models of tests/reference/make_llm_fixtures.py.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "autograd/autograd.h"
#include "core/allocator.h"
#include "core/factory.h"
#include "core/ops.h"
#include "models/llm/language_model.h"
#include "tests/layers/layer_test_util.h"
#include "tests/test_paths.h"

namespace moh {
namespace {

LlmOptions tiny_llama(DType dtype = DType::Float32) {
  LlmOptions o;
  o.vocab_size = 11, o.dim = 16, o.depth = 2, o.heads = 4, o.kv_heads = 2, o.mlp_hidden = 24, o.max_seq_len = 8;
  o.dtype = dtype;
  return o;
}

LlmOptions tiny_gpt2(DType dtype = DType::Float32) {
  LlmOptions o = tiny_llama(dtype);
  o.arch = LlmOptions::Arch::Gpt2;
  o.kv_heads = 0;
  return o;
}

Tensor random_tokens(int64_t batch, int64_t tokens, int64_t vocab, uint64_t seed) {
  Generator gen(seed);
  std::vector<int64_t> ids;
  for (double u : uniform({batch * tokens}, 0.0, double(vocab), gen, DType::Float64).to_vector<double>())
    ids.push_back(std::min(int64_t(u), vocab - 1));
  return from_vector(ids, {batch, tokens}, DType::Int64);
}

std::set<std::string> param_names(const Module& m) {
  std::set<std::string> names;
  for (const auto& [name, _] : m.named_parameters()) names.insert(name);
  return names;
}

TEST(Llm, LlamaShapesAndNames) {
  Generator gen(1);
  LanguageModel model(tiny_llama(), gen);
  const LlmOutput out = model.forward(random_tokens(2, 5, 11, 2));
  EXPECT_EQ(out.logits.shape(), (Shape{2, 5, 11}));
  EXPECT_TRUE(out.balance_losses.empty());
  const auto names = param_names(model);
  for (const char* name : {"tok_embed.weight", "blocks.0.norm1.weight", "blocks.0.attn.qkv.weight",
                           "blocks.0.attn.proj.weight", "blocks.0.norm2.weight", "blocks.1.mlp.w1.weight",
                           "blocks.1.mlp.w2.weight", "blocks.1.mlp.w3.weight", "norm.weight", "lm_head.weight"})
    EXPECT_TRUE(names.count(name)) << name;
  for (const std::string& name : names) EXPECT_FALSE(name.ends_with(".bias")) << name;  // no biases in LLaMA
  EXPECT_FALSE(names.count("pos_embed.weight"));
  const StateDict s = model.state_dict();
  EXPECT_EQ(s.at("blocks.0.attn.qkv.weight").shape(), (Shape{(4 + 2 * 2) * 4, 16}));  // GQA: 2 kv heads
  EXPECT_EQ(s.at("blocks.0.mlp.w1.weight").shape(), (Shape{24, 16}));
  EXPECT_EQ(s.at("lm_head.weight").shape(), (Shape{11, 16}));
  EXPECT_TRUE(model.no_weight_decay_names().empty());
}

// embed, the blocks' halves around their attention and logits compose to forward (what a caller
// running the attention itself, with a KV cache, relies on).
TEST(Llm, PiecesComposeToForward) {
  for (const LlmOptions& o : {tiny_llama(), tiny_gpt2()}) {
    Generator gen(1);
    LanguageModel model(o, gen);
    const Tensor tokens = random_tokens(2, 6, 11, 3);
    ag::Variable x = model.embed(tokens);
    for (const auto& block : model.blocks)
      x = block->feed_forward(ag::add(x, block->attn->forward(block->attention_input(x)).out));
    EXPECT_EQ(model.logits(x).data().to_vector<float>(), model.forward(tokens).logits.data().to_vector<float>())
        << arch_name(o.arch);
  }
  // GPT-2's positions start where asked: the last token embedded at position 5 alone.
  Generator gen(1);
  LanguageModel gpt2(tiny_gpt2(), gen);
  const Tensor tokens = random_tokens(1, 6, 11, 4);
  EXPECT_EQ(gpt2.embed(tokens.narrow(1, 5, 1).contiguous(), 5).data().to_vector<float>(),
            gpt2.embed(tokens).data().narrow(1, 5, 1).contiguous().to_vector<float>());
  EXPECT_ERROR_MENTIONS(gpt2.embed(tokens, 3), "max_seq_len 8");
}

TEST(Llm, Gpt2ShapesAndNamesAreTied) {
  Generator gen(1);
  LanguageModel model(tiny_gpt2(), gen);
  EXPECT_TRUE(model.options().tie_embeddings);
  EXPECT_EQ(model.options().mlp_hidden, 24);
  EXPECT_EQ(model.forward(random_tokens(3, 8, 11, 2)).logits.shape(), (Shape{3, 8, 11}));
  const auto names = param_names(model);
  for (const char* name : {"tok_embed.weight", "pos_embed.weight", "blocks.0.norm1.weight", "blocks.0.norm1.bias",
                           "blocks.0.attn.qkv.bias", "blocks.0.attn.proj.bias", "blocks.1.mlp.fc1.weight",
                           "blocks.1.mlp.fc2.bias", "norm.weight", "norm.bias"})
    EXPECT_TRUE(names.count(name)) << name;
  EXPECT_FALSE(names.count("lm_head.weight"));
  EXPECT_EQ(model.state_dict().at("pos_embed.weight").shape(), (Shape{8, 16}));
  EXPECT_EQ(model.no_weight_decay_names(), (std::vector<std::string>{"pos_embed.weight"}));
}

TEST(Llm, ResolvesArchitectureDefaults) {
  LlmOptions o = llm_preset("llm_s");
  LlmOptions r = resolved(o);
  EXPECT_EQ(r.kv_heads, 12);
  EXPECT_EQ(r.head_dim, 64);
  EXPECT_EQ(r.mlp_hidden, 2048);  // 2/3 * 4 * 768 = 2048, already a multiple of 256
  EXPECT_FALSE(r.tie_embeddings);
  r = resolved(llm_preset("llm_b"));
  EXPECT_EQ(r.head_dim, 96);
  EXPECT_EQ(r.mlp_hidden, 4096);
  o = llm_preset("kjv_tiny");
  o.vocab_size = 74;
  EXPECT_EQ(resolved(o).mlp_hidden, 384);  // the preset's own
  EXPECT_TRUE(resolved(o).tie_embeddings);
  o.mlp_hidden = 0, o.dim = 100, o.heads = 5;  // 2/3 * 400 = 266 -> 512
  EXPECT_EQ(resolved(o).mlp_hidden, 512);
  o = llm_preset("gpt2_124m");
  EXPECT_EQ(resolved(o).mlp_hidden, 3072);
  EXPECT_TRUE(resolved(o).tie_embeddings);
}

TEST(Llm, PresetParameterCounts) {
  Generator gen(0);
  EXPECT_EQ(LanguageModel(llm_preset("gpt2_124m"), gen).num_parameters(), 124439808);  // GPT-2 small
  LlmOptions kjv = llm_preset("kjv_tiny");
  EXPECT_ERROR_MENTIONS(LanguageModel(kjv, gen), "vocab_size");
  kjv.vocab_size = 74;
  EXPECT_EQ(LanguageModel(kjv, gen).num_parameters(), 853120 + 128 * 74);
  EXPECT_ERROR_MENTIONS(llm_preset("llama_70b"), "kjv_tiny, gpt2_124m, llm_s or llm_b");
}

TEST(Llm, OptionAndInputErrorsNameTheField) {
  Generator gen(1);
  LlmOptions o = tiny_llama();
  o.kv_heads = 3;
  EXPECT_ERROR_MENTIONS(LanguageModel(o, gen), "kv_heads 3 must divide heads 4");
  o.kv_heads = 8;
  EXPECT_ERROR_MENTIONS(LanguageModel(o, gen), "kv_heads 8");
  o = tiny_llama();
  o.heads = 3, o.kv_heads = 0;
  EXPECT_ERROR_MENTIONS(LanguageModel(o, gen), "not a multiple of heads");
  o.head_dim = 5;
  EXPECT_ERROR_MENTIONS(LanguageModel(o, gen), "even head_dim");
  o = tiny_llama();
  o.attention.shared_heads = {1, 1, 1};
  o.attention.routed_topk = {1};
  EXPECT_ERROR_MENTIONS(LanguageModel(o, gen), "model.shared_heads has 3 values");

  LanguageModel model(tiny_llama(), gen);
  EXPECT_ERROR_MENTIONS(model.forward(random_tokens(1, 9, 11, 1)), "max_seq_len 8");
  EXPECT_ERROR_MENTIONS(model.forward(random_tokens(1, 4, 11, 1).to(DType::Float32)), "int64 tokens");
  EXPECT_ERROR_MENTIONS(model.forward(random_tokens(1, 4, 11, 1).reshape({4})), "[B, T]");
  EXPECT_THROW(model.forward(from_vector(std::vector<int64_t>{0, 11}, {1, 2}, DType::Int64)), Error);  // id >= V
}

TEST(Llm, LlamaCanTieItsEmbeddings) {
  LlmOptions o = tiny_llama();
  o.tie_embeddings = true;
  Generator gen(1);
  LanguageModel model(o, gen);
  EXPECT_FALSE(param_names(model).count("lm_head.weight"));
  EXPECT_EQ(model.forward(random_tokens(2, 3, 11, 2)).logits.shape(), (Shape{2, 3, 11}));
}

// The tied weight's gradient is the sum of its two uses: an untied model holding the same values in
// tok_embed and lm_head gets the two halves separately.
TEST(Llm, TiedWeightGradientSumsBothUses) {
  LlmOptions o = tiny_llama(DType::Float64);
  o.tie_embeddings = true;
  Generator gen(3);
  LanguageModel tied(o, gen);
  o.tie_embeddings = false;
  LanguageModel untied(o, gen);
  StateDict state = tied.state_dict();
  state["lm_head.weight"] = state.at("tok_embed.weight").clone();
  untied.load_state_dict(state);

  const Tensor tokens = random_tokens(2, 6, 11, 4);
  const Tensor targets = random_tokens(12, 1, 11, 5).reshape({12});
  auto loss = [&](const LanguageModel& m) {
    return ag::cross_entropy(ag::reshape(m.forward(tokens).logits, {12, 11}), targets);
  };
  ag::backward(loss(tied));
  ag::backward(loss(untied));
  const Tensor sum = add(untied.tok_embed->weight().grad(), untied.lm_head->weight().grad());
  nn_test::expect_close(tied.tok_embed->weight().grad(), sum.to_vector<double>(), 1e-12, "tied grad");
  // Both halves matter (neither use alone gives the tied gradient).
  EXPECT_GT(amax(abs(untied.lm_head->weight().grad())).item<double>(), 1e-3);
  EXPECT_GT(amax(abs(untied.tok_embed->weight().grad())).item<double>(), 1e-3);
}

TEST(Llm, MoHBlocksFromTheSpecReturnBalanceLossesInTraining) {
  LlmOptions o = tiny_llama();
  o.depth = 3;
  o.attention.shared_heads = {4, 1, 0};
  o.attention.routed_topk = {0, 2, 1};
  for (LlmOptions::Arch arch : {LlmOptions::Arch::Llama, LlmOptions::Arch::Gpt2}) {
    o.arch = arch;
    for (MoHExecution execution : {MoHExecution::Dense, MoHExecution::Sparse}) {
      o.attention.execution = execution;
      Generator gen(5);
      LanguageModel model(o, gen);
      const auto names = param_names(model);
      EXPECT_TRUE(names.count("blocks.0.attn.shared_gate.weight"));
      EXPECT_FALSE(names.count("blocks.0.attn.router.weight"));
      EXPECT_TRUE(names.count("blocks.1.attn.router.weight"));
      EXPECT_TRUE(names.count("blocks.2.attn.router.weight"));
      const Tensor tokens = random_tokens(2, 7, 11, 6);
      const LlmOutput train = model.forward(tokens);
      ASSERT_EQ(train.balance_losses.size(), 2u);  // blocks 1 and 2 route
      for (const auto& loss : train.balance_losses) {
        EXPECT_EQ(loss.dim(), 0);
        EXPECT_GT(loss.data().item<double>(), 0.0);
      }
      model.eval();
      EXPECT_TRUE(model.forward(tokens).balance_losses.empty());
    }
  }
}

// Changing the tokens after position t leaves the logits at positions <= t unchanged.
void expect_causal(const LlmOptions& o, const std::string& what) {
  Generator gen(7);
  LanguageModel model(o, gen);
  model.eval();
  const int64_t t = 8, cut = 4, v = o.vocab_size;
  Tensor a = random_tokens(2, t, v, 8);
  std::vector<int64_t> changed = a.to_vector<int64_t>();
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = cut + 1; i < t; ++i) changed[size_t(b * t + i)] = (changed[size_t(b * t + i)] + 1 + i) % v;
  const Tensor la = model.forward(a).logits.data();
  const Tensor lb = model.forward(from_vector(changed, {2, t}, DType::Int64)).logits.data();
  EXPECT_EQ(la.narrow(1, 0, cut + 1).contiguous().to_vector<double>(),
            lb.narrow(1, 0, cut + 1).contiguous().to_vector<double>())
      << what;
  EXPECT_NE(la.narrow(1, cut + 1, t - cut - 1).contiguous().to_vector<double>(),
            lb.narrow(1, cut + 1, t - cut - 1).contiguous().to_vector<double>())
      << what;
}

TEST(Llm, LogitsAreCausal) {
  expect_causal(tiny_llama(DType::Float64), "llama");
  expect_causal(tiny_gpt2(DType::Float64), "gpt2");
  LlmOptions moh = tiny_llama(DType::Float64);
  moh.attention.shared_heads = {1};
  moh.attention.routed_topk = {2};
  expect_causal(moh, "llama moh sparse");
  moh.attention.execution = MoHExecution::Dense;
  expect_causal(moh, "llama moh dense");
}

TEST(Llm, InitFollowsGpt2) {
  LlmOptions o = tiny_gpt2();
  o.dim = 128, o.depth = 8, o.heads = 4, o.mlp_hidden = 0, o.vocab_size = 300;
  Generator gen(3);
  LanguageModel model(o, gen);
  const StateDict s = model.state_dict();
  auto stddev = [&](const std::string& name) {
    const auto v = s.at(name).to_vector<double>();
    double sq = 0;
    for (double x : v) sq += x * x;
    return std::sqrt(sq / double(v.size()));
  };
  // Untruncated N(0, 0.02) (a truncated one would have std 0.0176).
  for (const char* name : {"tok_embed.weight", "pos_embed.weight", "blocks.0.attn.qkv.weight",
                           "blocks.3.mlp.fc1.weight"})
    EXPECT_NEAR(stddev(name), 0.02, 0.0006) << name;
  for (const char* name : {"blocks.0.attn.proj.weight", "blocks.7.mlp.fc2.weight"})
    EXPECT_NEAR(stddev(name), 0.02 / 4.0, 0.0002) << name;  // 1 / sqrt(2 * depth)
  for (double b : s.at("blocks.0.attn.qkv.bias").to_vector<double>()) ASSERT_EQ(b, 0.0);
  for (double w : s.at("norm.weight").to_vector<double>()) ASSERT_EQ(w, 1.0);
  o = tiny_llama();
  o.dim = 128, o.depth = 8, o.heads = 4, o.kv_heads = 0, o.mlp_hidden = 256, o.vocab_size = 300;
  LanguageModel llama(o, gen);
  const StateDict l = llama.state_dict();
  const auto w2 = l.at("blocks.2.mlp.w2.weight").to_vector<double>();
  double sq = 0;
  for (double x : w2) sq += x * x;
  EXPECT_NEAR(std::sqrt(sq / double(w2.size())), 0.005, 0.0002);
}

TEST(Llm, FlopsCountMatmulsAndAttention) {
  LlmOptions o = tiny_gpt2();
  Generator gen(1);
  LanguageModel mha(o, gen);
  const double d = 16, f = 24, v = 11, h = 4, dh = 4, t = 8, layers = 2;
  const double block = 2 * d * 3 * d + 2 * d * d + 2 * 2 * d * f + 4 * t * h * dh;
  const LanguageModel::Flops dense = mha.flops_per_token(8);
  EXPECT_DOUBLE_EQ(dense.dense, 3 * (layers * block + 2 * d * v));
  EXPECT_DOUBLE_EQ(dense.active, dense.dense);

  // One shared and top-1 of 3 routed heads: half the heads per token in each block; the gates
  // (router 3 x d, stage gate 2 x d) are added.
  o.attention.shared_heads = {1};
  o.attention.routed_topk = {1};
  LanguageModel moh(o, gen);
  const LanguageModel::Flops sparse = moh.flops_per_token(8);
  const double gates = 2 * d * 3 + 2 * d * 2;
  EXPECT_DOUBLE_EQ(sparse.dense, dense.dense + 3 * layers * gates);
  const double per_head = 4 * d * dh + 4 * t * dh;
  EXPECT_DOUBLE_EQ(sparse.active, sparse.dense - 3 * layers * 2 * per_head);
  EXPECT_ERROR_MENTIONS(moh.flops_per_token(0), "seq_len");
}

// Recomputing every block in the backward gives the same loss and gradients bit for bit, with a
// smaller peak of activation memory.
TEST(Llm, RecomputeGivesBitwiseEqualGradientsWithLessMemory) {
  LlmOptions o = tiny_llama();
  o.depth = 4, o.max_seq_len = 64, o.mlp_hidden = 64;
  o.attention.shared_heads = {1, 2, 0, 4};
  o.attention.routed_topk = {2, 1, 2, 0};
  const Tensor tokens = random_tokens(4, 64, 11, 3);
  const Tensor targets = random_tokens(256, 1, 11, 4).reshape({256});
  struct Run {
    std::vector<std::vector<float>> grads;
    float loss = 0;
    int64_t peak = 0;
  };
  auto run = [&](bool recompute, LlmOptions::Arch arch) {
    LlmOptions r = o;
    r.recompute = recompute, r.arch = arch;
    Generator gen(9);
    LanguageModel model(r, gen);
    Allocator& cpu = cpu_allocator();
    cpu.reset_peak();
    const int64_t base = cpu.stats().current_bytes;
    const LlmOutput out = model.forward(tokens);
    EXPECT_EQ(out.balance_losses.size(), 3u);
    ag::Variable loss = ag::cross_entropy(ag::reshape(out.logits, {256, 11}), targets);
    for (const ag::Variable& b : out.balance_losses) loss = ag::add(loss, ag::mul(b, 0.01));
    ag::backward(loss);
    Run result;
    result.peak = cpu.stats().peak_bytes - base;
    result.loss = loss.data().item<float>();
    for (const ag::Variable& p : model.parameters()) result.grads.push_back(p.grad().to_vector<float>());
    return result;
  };
  for (LlmOptions::Arch arch : {LlmOptions::Arch::Llama, LlmOptions::Arch::Gpt2}) {
    const Run plain = run(false, arch), recomputed = run(true, arch);
    EXPECT_EQ(recomputed.loss, plain.loss);
    ASSERT_EQ(recomputed.grads.size(), plain.grads.size());
    for (size_t i = 0; i < plain.grads.size(); ++i) EXPECT_EQ(recomputed.grads[i], plain.grads[i]) << i;
    EXPECT_LT(double(recomputed.peak), 0.7 * double(plain.peak)) << arch_name(arch);
  }
}

ag::GradcheckResult gradcheck_parameters(const LanguageModel& model, const Tensor& tokens) {
  return ag::gradcheck([&](const std::vector<ag::Variable>&) { return model.forward(tokens).logits; },
                       model.parameters());
}

TEST(Llm, GradcheckFloat64) {
  LlmOptions o;
  o.vocab_size = 7, o.dim = 8, o.depth = 1, o.heads = 2, o.kv_heads = 1, o.mlp_hidden = 8, o.max_seq_len = 4;
  o.dtype = DType::Float64;
  const Tensor tokens = random_tokens(2, 4, 7, 9);
  for (LlmOptions::Arch arch : {LlmOptions::Arch::Llama, LlmOptions::Arch::Gpt2}) {
    o.arch = arch;
    Generator gen(11);
    LanguageModel model(o, gen);
    const ag::GradcheckResult r = gradcheck_parameters(model, tokens);
    EXPECT_TRUE(r.ok) << arch_name(arch) << ": " << r.message;
    EXPECT_GT(r.elements_checked, 0);
  }
  // An all-shared gated MoH block (smooth: no top-k selection).
  o.arch = LlmOptions::Arch::Llama;
  o.attention.shared_heads = {2};
  o.attention.routed_topk = {0};
  Generator gen(12);
  LanguageModel moh(o, gen);
  const ag::GradcheckResult r = gradcheck_parameters(moh, tokens);
  EXPECT_TRUE(r.ok) << r.message;
}

std::vector<int64_t> int_list(const std::string& text) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    out.push_back(std::stoll(text.substr(start, comma - start)));
    start = comma + 1;
  }
  return out;
}

// The fixture's options (metadata named as the LlmOptions fields), in float64.
LlmOptions fixture_options(const std::map<std::string, std::string>& meta, MoHExecution execution) {
  LlmOptions o;
  o.arch = meta.at("arch") == "llama" ? LlmOptions::Arch::Llama : LlmOptions::Arch::Gpt2;
  o.vocab_size = std::stoll(meta.at("vocab_size")), o.dim = std::stoll(meta.at("dim"));
  o.depth = std::stoll(meta.at("depth")), o.heads = std::stoll(meta.at("heads"));
  o.kv_heads = std::stoll(meta.at("kv_heads")), o.head_dim = std::stoll(meta.at("head_dim"));
  o.mlp_hidden = std::stoll(meta.at("mlp_hidden")), o.max_seq_len = std::stoll(meta.at("max_seq_len"));
  o.rope_theta = std::stod(meta.at("rope_theta")), o.norm_eps = std::stod(meta.at("norm_eps"));
  o.tie_embeddings = meta.at("tie_embeddings") == "1";
  o.attention.shared_heads = int_list(meta.at("shared_heads"));
  o.attention.routed_topk = int_list(meta.at("routed_topk"));
  o.attention.execution = execution;
  o.dtype = DType::Float64;
  return o;
}

// The fixture's state for `model`: every entry must be one of the model's, except a zero
// stage_gate.bias, which a stage gate without a bias does without (make_llm_fixtures.py).
StateDict model_state(const LanguageModel& model, StateDict state) {
  const StateDict own = model.state_dict();
  for (auto it = state.begin(); it != state.end();) {
    if (own.count(it->first) || !it->first.ends_with("stage_gate.bias")) {
      ++it;
      continue;
    }
    EXPECT_EQ(amax(abs(it->second)).item<double>(), 0.0) << it->first;
    it = state.erase(it);
  }
  return state;
}

void expect_matches_golden(const std::string& name, MoHExecution execution = MoHExecution::Sparse) {
  const std::string path = MOH_TEST_PATH(MOH_FIXTURE_DIR) + "/llm_" + name + ".safetensors";
  const auto f = load_safetensors(path);
  const auto meta = load_safetensors_metadata(path);
  ASSERT_EQ(meta.at("generator"), "tests/reference/make_llm_fixtures.py");
  StateDict state;
  for (const auto& [key, t] : f)
    if (key.starts_with("state.")) state[key.substr(6)] = t;
  Generator gen(1);
  LanguageModel model(fixture_options(meta, execution), gen);
  model.load_state_dict(model_state(model, state));  // strict: every name is the reference's
  const Tensor& targets = f.at("targets");
  const LlmOutput out = model.forward(f.at("tokens"));
  nn_test::expect_close(out.logits.data(), f.at("logits").to_vector<double>(), 1e-10, name + " logits");
  ag::Variable loss = ag::cross_entropy(ag::reshape(out.logits, {targets.numel(), model.options().vocab_size}),
                                        targets.reshape({targets.numel()}));
  for (const ag::Variable& balance : out.balance_losses) loss = ag::add(loss, balance);
  EXPECT_NEAR(loss.data().item<double>(), f.at("loss").item<double>(), 1e-12) << name;
  ag::backward(loss);
  for (const auto& [pname, p] : model.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name << ": no gradient for " << pname;
    nn_test::expect_close(p.grad(), f.at("grad." + pname).to_vector<double>(), 1e-10, name + " grad " + pname);
  }
  // The float32 model (the fixture's parameters are float32 values) routes alike and agrees to float32 rounding.
  LlmOptions o32 = fixture_options(meta, execution);
  o32.dtype = DType::Float32;
  LanguageModel model32(o32, gen);
  model32.load_state_dict(model_state(model32, state));
  nn_test::expect_close(model32.forward(f.at("tokens")).logits.data(), f.at("logits").to_vector<double>(), 1e-4,
                        name + " float32 logits");
}

TEST(Llm, GoldenLlamaGqaRopeUntied) { expect_matches_golden("llama_gqa_rope_untied"); }

TEST(Llm, GoldenLlamaMoHTied) {
  expect_matches_golden("llama_moh_tied", MoHExecution::Sparse);
  expect_matches_golden("llama_moh_tied", MoHExecution::Dense);
}

TEST(Llm, GoldenGpt2Mha) { expect_matches_golden("gpt2_mha"); }

TEST(Llm, GoldenGpt2MoH) {
  expect_matches_golden("gpt2_moh", MoHExecution::Sparse);
  expect_matches_golden("gpt2_moh", MoHExecution::Dense);
}

}  // namespace
}  // namespace moh
