// eval.use_ema: EmaWeightsGuard lends the averaged weights and restores the trained ones bit for bit, a
// run evaluating with EMA weights trains exactly as one that does not (its evaluations are of the EMA
// weights), and eval.use_ema without ema.decay is a ConfigError naming the key.
#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tests/trainers/synthetic_run.h"
#include "tests/trainers/trainer_test_util.h"
#include "trainers/checkpoint.h"
#include "trainers/ema.h"

namespace moh {
namespace {

StateDict snapshot(const Module& m) {
  StateDict s;
  for (const auto& [k, v] : m.state_dict()) s[k] = v.clone();
  return s;
}

TEST(EmaWeightsGuard, LendsTheAverageAndRestoresTheTrainedWeights) {
  trainer_test::TinyMlp model(3, 4, 2, DType::Float32, 5);
  Ema ema(model, 0.9);
  for (auto& [_, p] : model.named_parameters()) {
    Tensor t = p.data();
    mul_(t, 1.7);
  }
  const StateDict trained = snapshot(model);
  {
    EmaWeightsGuard guard(ema, model);
    for (const auto& [k, v] : ema.state_dict()) trainer_test::expect_identical(model.state_dict().at(k), v, k);
  }
  for (const auto& [k, v] : trained) trainer_test::expect_identical(model.state_dict().at(k), v, k);
}

class EvalWithEma : public test::TempDirTest {};

TEST_F(EvalWithEma, EvaluatesTheAverageWithoutChangingTraining) {
  const std::vector<std::string> common{"ema.decay=0.8", "eval.every=10", "train.steps=20"};
  auto run = [&](const std::string& name, bool use_ema) {
    std::vector<std::string> o = common;
    o.push_back("run.name=" + name);
    o.push_back(std::string("eval.use_ema=") + (use_ema ? "true" : "false"));
    Config cfg = test::synthetic_config(dir_, o);
    auto task = test::make_synthetic_task(cfg);
    const TrainResult r = Trainer(cfg, *task).run();
    return std::make_pair(r, snapshot(task->model()));
  };
  const auto [ema_run, ema_weights] = run("ema", true);
  const auto [plain_run, plain_weights] = run("plain", false);
  for (const auto& [k, v] : plain_weights) trainer_test::expect_identical(ema_weights.at(k), v, k);
  EXPECT_NE(ema_run.eval.at("loss"), plain_run.eval.at("loss"));
  // The reported metrics are those of the checkpoint's EMA weights.
  const CheckpointData d = load_checkpoint(ema_run.checkpoint);
  Config cfg = test::synthetic_config(dir_, {"run.name=check"});
  auto task = test::make_synthetic_task(cfg);
  task->model().load_state_dict(d.ema);
  EXPECT_EQ(task->evaluate().at("loss"), ema_run.eval.at("loss"));
}

TEST_F(EvalWithEma, NeedsAnEma) {
  Config cfg = test::synthetic_config(dir_, {"eval.use_ema=true"});
  auto task = test::make_synthetic_task(cfg);
  test::expect_error<ConfigError>([&] { Trainer(cfg, *task); }, {"eval.use_ema needs ema.decay"});
}

}  // namespace
}  // namespace moh
