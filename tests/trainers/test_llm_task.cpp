// The `llm` task on a generated character corpus: a short run learns and logs the language metrics
// (tokens/s, active heads, FLOPs per token), evaluation's perplexity and bits per byte follow from its
// loss and the decoded text, an MoH run with GQA resumes bit for bit, and configs the model or the data
// cannot honour are rejected naming the key or the file.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include <nlohmann/json.hpp>

#include "data/text/token_shard.h"
#include "tests/test_util.h"
#include "tests/trainers/llm_run.h"
#include "tests/trainers/resume_run.h"
#include "tests/trainers/synthetic_run.h"
#include "trainers/trainer.h"

namespace moh {
namespace {

namespace fs = std::filesystem;

class LlmTask : public test::TempDirTest {};

TEST_F(LlmTask, ShortRunLearnsAndLogsLanguageMetrics) {
  Config cfg = test::llm_config(path(""), "learn", {});
  auto task = task_family("llm").create(cfg);
  const auto before = task->evaluate();
  const double vocab = 24;  // the grammar's distinct characters + end of text, about
  EXPECT_NEAR(before.at("loss"), std::log(vocab), 0.6) << "an untrained model is near uniform";
  const TrainResult r = Trainer(cfg, *task).run();
  const auto& after = r.eval;
  EXPECT_LT(after.at("loss"), before.at("loss") - 1.0);
  EXPECT_NEAR(after.at("perplexity"), std::exp(after.at("loss")), 1e-9);
  // Validation: one document of 200 sentences after its end-of-text id, windows of 33 tokens every 32;
  // every target but the end-of-text id (it is not one: the first token is never a target) is one byte.
  const double val_tokens = after.at("tokens");
  EXPECT_EQ(std::fmod(val_tokens, 32.0), 0.0);
  EXPECT_NEAR(after.at("bits_per_byte"), after.at("loss") / std::numbers::ln2, 1e-9);
  EXPECT_EQ(after.at("active_heads"), 1.0);

  const auto records = test::read_metrics(fs::path(r.run_dir));
  int train_records = 0;
  for (const auto& rec : records) {
    if (!rec.contains("tokens_per_s")) continue;
    ++train_records;
    EXPECT_GT(rec["tokens_per_s"].get<double>(), 0);
    EXPECT_EQ(rec["active_heads"].get<double>(), 1.0);
    EXPECT_GT(rec["flops_per_token"].get<double>(), 0);
    EXPECT_EQ(rec["flops_per_token"].get<double>(), rec["flops_per_token_dense"].get<double>());  // MHA
    EXPECT_NEAR(rec["model_tflops"].get<double>(),
                rec["flops_per_token"].get<double>() * rec["tokens_per_s"].get<double>() / 1e12, 1e-12);
  }
  EXPECT_EQ(train_records, 6);
}

TEST_F(LlmTask, MohRunWithGroupedQueryAttentionResumesBitForBit) {
  const std::vector<std::string> common{"model.attention=moh", "model.shared_heads=[1]", "model.routed_topk=[2]",
                                        "model.kv_heads=2", "schedule.name=constant", "schedule.warmup_steps=0",
                                        "train.steps=8"};
  const TrainResult done = test::expect_resume_matches_whole_run(
      "llm", [&](const std::string& name, const std::vector<std::string>& o) { return test::llm_config(path(""), name, o); },
      common, 4);
  EXPECT_EQ(done.step, 8);
  EXPECT_EQ(done.eval.at("active_heads"), 0.75);
}

TEST_F(LlmTask, EvalTokensLimitsTheValidationWindows) {
  Config cfg = test::llm_config(path(""), "limit", {"data.eval_tokens=100"});
  auto task = task_family("llm").create(cfg);
  EXPECT_EQ(task->evaluate().at("tokens"), 3 * 32);  // 100 tokens: 3 whole windows of 32
}

TEST_F(LlmTask, HeadUsageFileHoldsEachMohBlocksSelectionRates) {
  Config cfg = test::llm_config(path(""), "usage",
                                {"model.attention=moh", "model.shared_heads=[1, 2]", "model.routed_topk=[2, 1]",
                                 "eval.head_usage=" + path("usage.json")});
  auto task = task_family("llm").create(cfg);
  const double tokens = task->evaluate().at("tokens");
  const auto usage = nlohmann::json::parse(test::read_text(path("usage.json")));
  EXPECT_EQ(usage["tokens"].get<double>(), tokens);
  ASSERT_EQ(usage["moh_blocks"].size(), 2u);
  for (int b = 0; b < 2; ++b) {
    const auto& block = usage["moh_blocks"][size_t(b)];
    const int64_t shared = block["shared_heads"], topk = block["routed_topk"];
    EXPECT_EQ(block["block"].get<int>(), b);
    const auto rates = block["selection_rate"].get<std::vector<double>>();
    ASSERT_EQ(rates.size(), 4u);
    double routed = 0;
    for (int64_t h = 0; h < 4; ++h) {
      if (h < shared) EXPECT_EQ(rates[size_t(h)], 1.0) << "shared head " << h;
      else routed += rates[size_t(h)];
      EXPECT_GE(rates[size_t(h)], 0.0);
    }
    EXPECT_NEAR(routed, double(topk), 1e-9) << "every token keeps top-" << topk << " routed heads";
  }
}

TEST_F(LlmTask, ConfigsTheModelOrDataCannotHonourNameTheKey) {
  auto create = [&](const std::vector<std::string>& overrides) {
    Config cfg = test::llm_config(path(""), "bad", overrides);
    return task_family("llm").create(cfg);
  };
  test::expect_error<ConfigError>([&] { create({"data.seq_len=65"}); }, {"data.seq_len 65 exceeds model.max_seq_len 64"});
  test::expect_error<ConfigError>([&] { create({"model.vocab_size=5"}); },
                                  {"model.vocab_size 5 is smaller than the tokenizer's"});
  test::expect_error<ConfigError>([&] { create({"model.kv_heads=3"}); }, {"model.kv_heads 3 must divide model.heads 4"});
  test::expect_error<ConfigError>([&] { create({"model.heads=5"}); }, {"model.heads 5 does not divide model.dim 32"});
  test::expect_error<ConfigError>([&] { create({"model.arch=gpt2", "model.tie_embeddings=false"}); },
                                  {"model.tie_embeddings", "always tie"});
  test::expect_error<ConfigError>([&] { create({"model.attention=moh", "model.shared_heads=[1]",
                                                "model.routed_topk=[4]"}); },
                                  {"model.routed_topk 4 (block 0) exceeds the 3 routed heads"});
  test::expect_error([&] { create({"data.dir=" + path("nowhere")}); }, {"nowhere"});
  test::expect_error([&] { create({"data.tokenizer=" + path("nowhere.json")}); }, {"nowhere.json"});
  // Shards holding ids past the tokenizer's vocabulary (made with another tokenizer).
  fs::create_directories(path("wide"));
  std::vector<text::TokenId> ids(200, 3);
  ids[50] = 900;
  text::write_token_shard(path("wide/train_000000.bin"), ids, text::TokenWidth::U16);
  text::write_token_shard(path("wide/val_000000.bin"), ids, text::TokenWidth::U16);
  auto task = create({"data.dir=" + path("wide"), "train.steps=1", "train.batch_size=64"});
  test::expect_error([&] { task->train_micro_batch(64); }, {"hold id 900", "another tokenizer"});
}

}  // namespace
}  // namespace moh
