// `moh generate` on a tiny trained llm run: a seed gives the same text on every run and another seed
// other text; --temperature 0 prints the greedy continuation a full recompute of the checkpoint's
// model gives; the speed line goes to stderr; bad flags and a non-llm run exit 2, a missing run 1.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "autograd/tape.h"
#include "core/factory.h"
#include "core/ops.h"
#include "data/text/tokenizer.h"
#include "models/llm/language_model.h"
#include "tests/test_util.h"
#include "tests/tools/cli_test_util.h"
#include "tests/trainers/llm_run.h"
#include "trainers/checkpoint.h"
#include "trainers/llm_task.h"

namespace moh {
namespace {

namespace fs = std::filesystem;


// One tiny llm run (30 steps) shared by the tests of the suite.
class GenerateCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("moh_GenerateCli_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    test::llm_config(dir_, "gen", {});  // writes the corpus and gen.yaml
    const test::Result trained = test::moh("train " + path("gen.yaml") + " train.steps=30", false);
    ASSERT_EQ(trained.status, 0) << trained.output;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string path(const std::string& name) { return (dir_ / name).string(); }

  // stdout of `moh generate RUN ARGS`; stderr goes to err.txt.
  static test::Result generate(const std::string& args) {
    return test::moh("generate " + path("runs/gen") + " " + args + " 2> " + path("err.txt"), false);
  }
  static std::string stderr_text() {
    std::ifstream in(path("err.txt"));
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  static fs::path dir_;
};
fs::path GenerateCli::dir_;

// The greedy continuation of `prompt` by a full forward over the whole context at every step.
std::string greedy_by_full_recompute(const std::string& run, const std::string& prompt, int64_t max_tokens) {
  CheckpointManager manager(run + "/checkpoints", 0);
  const CheckpointData data = load_checkpoint(*manager.latest_valid());
  const Config cfg = Config::parse(data.config_text, training_schema("llm"), "stored", {});
  const auto tokenizer = text::load_tokenizer(cfg.get_string("data.tokenizer"));
  Generator gen(0);
  LanguageModel model(llm_options_from_config(cfg, tokenizer->vocab_size()), gen);
  model.load_state_dict(data.model);
  model.eval();
  ag::NoGradGuard no_grad;
  std::vector<text::TokenId> ids = tokenizer->encode_ordinary(prompt);
  std::vector<text::TokenId> generated;
  for (int64_t i = 0; i < max_tokens; ++i) {
    std::vector<int64_t> context(ids.begin(), ids.end());
    const int64_t t = int64_t(context.size());
    const Tensor logits = model.forward(from_vector(context, {1, t}, DType::Int64)).logits.data().select(1, t - 1);
    const auto next = text::TokenId(argmax(logits, 1).to_vector<int64_t>()[0]);
    if (next == *tokenizer->end_of_text()) break;
    ids.push_back(next);
    generated.push_back(next);
  }
  return tokenizer->decode(generated);
}

TEST_F(GenerateCli, ASeedGivesTheSameTextAndGreedyEqualsAFullRecompute) {
  const test::Result a = generate("--prompt \"the king \" --max-tokens 40 --seed 5 --temperature 1");
  ASSERT_EQ(a.status, 0) << stderr_text();
  EXPECT_NE(stderr_text().find("tokens/s"), std::string::npos) << stderr_text();
  EXPECT_EQ(generate("--prompt \"the king \" --max-tokens 40 --seed 5 --temperature 1").output, a.output);
  EXPECT_NE(generate("--prompt \"the king \" --max-tokens 40 --seed 6 --temperature 1").output, a.output);
  const test::Result greedy = generate("--prompt \"a shepherd \" --max-tokens 24 --temperature 0");
  ASSERT_EQ(greedy.status, 0) << stderr_text();
  const std::string want = greedy_by_full_recompute(path("runs/gen"), "a shepherd ", 24);
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(greedy.output, want + "\n");
}

TEST_F(GenerateCli, BadFlagsExitTwoAndANonLlmRunIsRefused) {
  for (const std::string& args : {std::string("--prompt x --temperature -1"), std::string("--prompt x --top-p 0"),
                                  std::string("--prompt x --top-k -2"), std::string("--prompt x --max-tokens 0"),
                                  std::string("--prompt x --max-tokens lots"), std::string("--prompt x --bogus 1"),
                                  std::string("--max-tokens 3"), std::string("--prompt x model.nothing=1")}) {
    EXPECT_EQ(generate(args).status, 2) << args << ": " << stderr_text();
    EXPECT_NE(stderr_text().find("moh generate"), std::string::npos) << stderr_text();
  }
  EXPECT_NE(stderr_text().find("config error"), std::string::npos);  // the last: a bad override
  EXPECT_EQ(test::moh("generate --prompt x").status, 2);

  std::ofstream(path("syn.yaml")) << "task: synthetic\nrun: {name: syn, dir: " << path("runs")
                                  << "}\ntrain: {steps: 2, batch_size: 8}\ndata: {train_size: 64, eval_size: 32}\n";
  ASSERT_EQ(test::moh("train " + path("syn.yaml"), false).status, 0);
  const test::Result refused = test::moh("generate " + path("runs/syn") + " --prompt x");
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(refused.output.find("a 'synthetic' run; moh generate needs a run of the llm task"), std::string::npos)
      << refused.output;
  EXPECT_EQ(test::moh("generate " + path("runs/none") + " --prompt x").status, 1);
}

}  // namespace
}  // namespace moh
