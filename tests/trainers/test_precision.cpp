// Device and precision of a run on the CPU: config errors for devices the build or machine lacks and
// for mixed precision without CUDA (naming the key), the numerics switches a trainer sets for its
// lifetime, the dynamic loss scaler (scaling, unscaling, overflow backoff and growth, a skipped
// update, checkpoint round trip with an identical resumed run), and the op path of the optimizers
// and the gradient norm (what CUDA tensors run) against the fused CPU loops.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/backend_flags.h"
#include "core/ops.h"
#include "tests/trainers/trainer_test_util.h"
#include "trainers/adamw.h"
#include "trainers/checkpoint.h"
#include "trainers/grad_clip.h"
#include "trainers/precision.h"
#include "trainers/sgd.h"
#include "trainers/trainer.h"

namespace moh {
namespace {

namespace fs = std::filesystem;
using trainer_test::expect_identical;
using trainer_test::mse;
using trainer_test::TinyMlp;

class TrainerPrecision : public test::TempDirTest {
 protected:
  Config config(const std::vector<std::string>& overrides) const {
    const std::string file = write("synthetic.yaml", "task: synthetic\n"
                                                     "run: {name: p, dir: " + path("runs") + "}\n"
                                                     "train: {steps: 4, batch_size: 16, log_every: 1}\n"
                                                     "eval: {every: 0}\n"
                                                     "checkpoint: {every: 0}\n"
                                                     "data: {train_size: 64, eval_size: 32}\n");
    return Config::load(file, training_schema("synthetic"), overrides);
  }
};

// Expects a ConfigError whose message holds every part.
void expect_config_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  test::expect_error<ConfigError>(fn, parts);
}

// What a CUDA device name fails with here: the build or the machine lacks it.
std::string missing_cuda_reason(int index) {
  if (!cuda_compiled()) return "built without the CUDA backend";
  if (cuda_device_count() == 0) return "this machine has none";
  return index >= cuda_device_count() ? "is not on this machine" : "";
}

TEST_F(TrainerPrecision, ADeviceTheBuildOrMachineLacksIsAConfigErrorNamingTheKey) {
  const int absent = std::max(cuda_device_count(), 7);
  const std::string name = "cuda:" + std::to_string(absent);
  const Config cfg = config({"device=" + name});
  expect_config_error([&] { training_device(cfg); },
                      {"override 'device=" + name + "'", "device '" + name + "'", missing_cuda_reason(absent)});
  // The task places its model there, so it fails first; a trainer given a CPU task fails the same way.
  expect_config_error([&] { task_family("synthetic").create(cfg); }, {"device '" + name + "'"});
  auto cpu_task = task_family("synthetic").create(config({}));
  expect_config_error([&] { Trainer trainer(cfg, *cpu_task); }, {"device '" + name + "'", missing_cuda_reason(absent)});
  if (cuda_device_count() == 0) {
    expect_config_error([&] { training_device(config({"device=cuda"})); },
                        {"override 'device=cuda'", "device 'cuda'", missing_cuda_reason(0)});
  }
  EXPECT_EQ(training_device(config({})), Device::cpu());
}

TEST_F(TrainerPrecision, MixedPrecisionOnTheCpuIsAConfigErrorNamingThePrecisionKey) {
  auto task = task_family("synthetic").create(config({}));
  for (const char* p : {"bf16", "fp16"}) {
    const Config cfg = config({std::string("precision=") + p});
    expect_config_error([&] { MixedPrecision::from_config(cfg, Device::cpu()); },
                        {std::string("override 'precision=") + p + "'", std::string("precision '") + p + "'",
                         "needs device: cuda", "device: cpu"});
    expect_config_error([&] { Trainer trainer(cfg, *task); }, {std::string("precision '") + p + "' needs device: cuda"});
  }
  EXPECT_EQ(MixedPrecision::from_config(config({}), Device::cpu()).precision(), Precision::Fp32);
  expect_config_error([&] { config({"loss_scale.backoff_factor=1"}); }, {"loss_scale.backoff_factor"});
  expect_config_error([&] { config({"loss_scale.growth_interval=0"}); }, {"loss_scale.growth_interval"});
}

TEST_F(TrainerPrecision, DeterministicAndTf32KeysSetTheFlagsWhileTheTrainerLives) {
  ASSERT_FALSE(deterministic_algorithms());
  ASSERT_FALSE(allow_tf32());
  const Config cfg = config({"deterministic=true", "tf32=true"});
  auto task = task_family("synthetic").create(cfg);
  {
    Trainer trainer(cfg, *task);
    EXPECT_TRUE(deterministic_algorithms());
    EXPECT_TRUE(allow_tf32());
    EXPECT_EQ(gemm_autocast(), DType::Float32);
  }
  EXPECT_FALSE(deterministic_algorithms());
  EXPECT_FALSE(allow_tf32());
  {
    const Config defaults = config({});
    Trainer trainer(defaults, *task);
    EXPECT_FALSE(deterministic_algorithms());
    EXPECT_FALSE(allow_tf32());
  }
}

TEST(TrainerMixedPrecision, PolicySetsTheGemmAutocastAndScalesOnlyUnderFp16) {
  EXPECT_EQ(MixedPrecision(Precision::Fp32).gemm_dtype(), DType::Float32);
  EXPECT_EQ(MixedPrecision(Precision::Bf16).gemm_dtype(), DType::BFloat16);
  EXPECT_EQ(MixedPrecision(Precision::Fp16).gemm_dtype(), DType::Float16);
  EXPECT_EQ(MixedPrecision(Precision::Bf16).scaler(), nullptr);
  ASSERT_NE(MixedPrecision(Precision::Fp16).scaler(), nullptr);
  EXPECT_EQ(MixedPrecision(Precision::Fp16).scaler()->scale(), 65536.0);
  EXPECT_EQ(MixedPrecision(Precision::Fp16).name(), "fp16");

  ag::Variable loss(scalar_tensor(0.75));
  EXPECT_EQ(MixedPrecision(Precision::Bf16).backward_loss(loss).impl(), loss.impl());
  EXPECT_EQ(MixedPrecision(Precision::Fp16, {.init_scale = 8}).backward_loss(loss).data().item<double>(), 6.0);

  test::expect_error([] { set_gemm_autocast(DType::Int64); }, {"set_gemm_autocast", "int64"});
  EXPECT_EQ(gemm_autocast(), DType::Float32);
}

// ---- DynamicLossScaler ----

TEST(TrainerLossScaler, ScaledBackwardAndUnscaleGiveTheUnscaledGradients) {
  DynamicLossScaler scaler({.init_scale = 1024});
  ag::Variable w(from_vector(std::vector<float>{1.5f, -2.0f, 0.25f}, {3}), true);
  ag::backward(scaler.scaled(ag::sum(ag::mul(w, w))));  // d/dw = 2w, times the scale
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{3072.0f, -4096.0f, 512.0f}));
  // A second leaf whose gradient is a broadcast view (not writable in place) is replaced.
  ag::Variable b(from_vector(std::vector<float>{0.0f, 0.0f}, {2}), true);
  b.set_grad(scalar_tensor(2048.0).expand({2}));
  EXPECT_TRUE(scaler.unscale_and_check({w, b}));
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{3.0f, -4.0f, 0.5f}));
  EXPECT_EQ(b.grad().to_vector<float>(), (std::vector<float>{2.0f, 2.0f}));
  ag::Variable none(scalar_tensor(1.0), true);  // no gradient: skipped
  EXPECT_TRUE(scaler.unscale_and_check({none}));
}

TEST(TrainerLossScaler, AnInfOrNanGradientIsReported) {
  DynamicLossScaler scaler({.init_scale = 4});
  for (double bad : {INFINITY, -INFINITY, NAN}) {
    ag::Variable a(zeros({2, 3}), true), c(zeros({4}), true);
    a.set_grad(full({2, 3}, 8.0));
    c.set_grad(from_vector(std::vector<double>{4, bad, 0, 1}, {4}, DType::Float32));
    EXPECT_FALSE(scaler.unscale_and_check({a, c})) << bad;
    EXPECT_EQ(a.grad().to_vector<float>(), std::vector<float>(6, 2.0f));  // still divided
  }
}

TEST(TrainerLossScaler, OverflowBacksOffAndGrowthFollowsTheInterval) {
  DynamicLossScaler scaler({.init_scale = 256, .growth_factor = 2, .backoff_factor = 0.5, .growth_interval = 3});
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 128);
  scaler.update(false);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 128);
  EXPECT_EQ(scaler.good_steps(), 2);
  scaler.update(true);  // an overflow restarts the count
  EXPECT_EQ(scaler.scale(), 64);
  EXPECT_EQ(scaler.good_steps(), 0);
  for (int i = 0; i < 2; ++i) scaler.update(false);
  EXPECT_EQ(scaler.scale(), 64);
  scaler.update(false);  // the third finite step in a row
  EXPECT_EQ(scaler.scale(), 128);
  EXPECT_EQ(scaler.good_steps(), 0);
  test::expect_error([] { DynamicLossScaler({.backoff_factor = 1.0}); }, {"backoff_factor"});
  test::expect_error([] { DynamicLossScaler({.init_scale = 0}); }, {"init_scale"});
  test::expect_error([] { DynamicLossScaler({.growth_interval = 0}); }, {"growth_interval"});
}

// The fp16 step as the trainer takes it, on the CPU: scaled backward, unscale and check, then the
// update or (on overflow) no update, then the scaler's update.
struct ScaledRun {
  TinyMlp model{4, 8, 3, DType::Float32, 11};
  AdamW optimizer{model.named_parameters(), {.lr = 0.05}};
  DynamicLossScaler scaler{{.init_scale = 1024, .growth_interval = 3}};

  static bool overflows(int64_t i) { return i % 7 == 4; }

  // Step i (its data depends on i alone); returns whether the update was applied.
  bool step(int64_t i) {
    ag::Variable loss = mse(model.forward(ag::Variable(test::rand_t({5, 4}, 100 + uint64_t(i)))),
                            test::rand_t({5, 3}, 200 + uint64_t(i)));
    if (overflows(i)) loss = ag::mul(loss, 1e36);  // finite, but not once scaled
    ag::backward(scaler.scaled(loss));
    std::vector<ag::Variable> params;
    for (const Optimizer::Param& p : optimizer.params()) params.push_back(p.var);
    const bool finite = scaler.unscale_and_check(params);
    if (finite) optimizer.step();
    optimizer.zero_grad();
    scaler.update(!finite);
    return finite;
  }
};

TEST(TrainerLossScaler, AnOverflowStepIsSkippedAndTheScaleHalves) {
  ScaledRun run;
  for (int64_t i = 0; i < 4; ++i) EXPECT_TRUE(run.step(i)) << i;
  EXPECT_EQ(run.scaler.scale(), 2048);  // grew once after steps 0..2
  const StateDict before = run.model.state_dict();
  std::map<std::string, Tensor> cloned;
  for (auto& [name, t] : before) cloned[name] = t.clone();
  const int64_t steps_before = run.optimizer.step_count();
  EXPECT_FALSE(run.step(4));
  EXPECT_EQ(run.scaler.scale(), 1024);
  EXPECT_EQ(run.scaler.good_steps(), 0);
  EXPECT_EQ(run.optimizer.step_count(), steps_before);
  for (auto& [name, t] : run.model.state_dict()) expect_identical(t, cloned.at(name), name);
  EXPECT_TRUE(run.step(5));
  EXPECT_EQ(run.optimizer.step_count(), steps_before + 1);
}

class TrainerLossScalerCheckpoint : public test::TempDirTest {};

TEST_F(TrainerLossScalerCheckpoint, StateRoundTripsAndTheResumedRunContinuesIdentically) {
  constexpr int64_t kSteps = 12, kSplit = 6;
  ScaledRun full;
  int64_t skipped = 0;
  for (int64_t i = 0; i < kSteps; ++i) skipped += full.step(i) ? 0 : 1;
  EXPECT_EQ(skipped, 2);  // steps 4 and 11
  EXPECT_EQ(full.scaler.scale(), 2048);

  ScaledRun first;
  for (int64_t i = 0; i < kSplit; ++i) first.step(i);
  CheckpointData d;
  d.step = kSplit;
  d.model = first.model.state_dict();
  d.optimizer = first.optimizer.state_dict();
  d.scheduler = {{"step", double(kSplit)}};
  d.scheduler.merge(first.scaler.state_dict());
  ASSERT_EQ(first.scaler.good_steps(), 1);  // a mid-interval state, so the count must survive too
  save_checkpoint(path("ckpt.h5"), d);

  const CheckpointData loaded = load_checkpoint(path("ckpt.h5"));
  ScaledRun resumed;
  resumed.model.load_state_dict(loaded.model);
  resumed.optimizer.load_state_dict(loaded.optimizer);
  resumed.scaler.load_state_dict(loaded.scheduler);
  EXPECT_EQ(resumed.scaler.scale(), first.scaler.scale());
  EXPECT_EQ(resumed.scaler.good_steps(), first.scaler.good_steps());
  for (int64_t i = kSplit; i < kSteps; ++i) EXPECT_EQ(resumed.step(i), !ScaledRun::overflows(i)) << i;
  EXPECT_EQ(resumed.scaler.scale(), full.scaler.scale());
  EXPECT_EQ(resumed.scaler.good_steps(), full.scaler.good_steps());
  const StateDict want = full.model.state_dict();
  for (auto& [name, t] : resumed.model.state_dict()) expect_identical(t, want.at(name), name);

  test::expect_error([] { DynamicLossScaler().load_state_dict({{"step", 3.0}}); },
                     {"missing entry 'loss_scale'"});
  test::expect_error(
      [] { DynamicLossScaler().load_state_dict({{"loss_scale", -1.0}, {"loss_scale_good_steps", 0.0}}); },
      {"loss_scale must be finite and > 0"});
}

// ---- The op path (CUDA tensors) against the fused CPU loops ----

// Parameters w [3, 5] (decayed), b [5] (not) of `dtype`, identical in each call.
NamedParameters op_path_params(DType dtype) {
  NamedParameters out;
  out.emplace_back("w", ag::Variable(test::rand_t({3, 5}, 1, dtype), true));
  out.emplace_back("b", ag::Variable(test::rand_t({5}, 2, dtype), true));
  return out;
}

void set_step_grads(const NamedParameters& params, int64_t step) {
  for (size_t i = 0; i < params.size(); ++i) {
    ag::Variable v = params[i].second;
    v.set_grad(mul(test::rand_t(v.shape(), 1000 + uint64_t(step) * 10 + i, v.dtype()), 3.0));
  }
}

void expect_close_values(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], w[i], 1e-6 * (1 + std::fabs(w[i]))) << what << " [" << i << "]";
}

// Steps a loop-path and an op-path optimizer `steps` times with the same gradients (optionally
// sharded to element ranges) and compares parameters and state after every step.
template <class Opt, class Options>
void expect_op_path_matches_loop(const Options& options, DType dtype, bool sharded, const std::string& what) {
  const NamedParameters loop_params = op_path_params(dtype), op_params = op_path_params(dtype);
  Opt loop(loop_params, options), ops(op_params, options);
  ops.set_update_path(UpdatePath::Ops);
  if (sharded) {
    loop.shard({{2, 9}, {1, 3}});
    ops.shard({{2, 9}, {1, 3}});
  }
  for (int64_t step = 0; step < 4; ++step) {
    set_step_grads(loop_params, step);
    set_step_grads(op_params, step);
    loop.step();
    ops.step();
    for (size_t i = 0; i < loop_params.size(); ++i)
      expect_close_values(op_params[i].second.data(), loop_params[i].second.data(),
                          str_cat(what, " step ", step, " ", loop_params[i].first));
    const auto loop_state = loop.state_dict(), op_state = ops.state_dict();
    for (const auto& [key, t] : loop_state) expect_close_values(op_state.at(key), t, str_cat(what, " ", key));
  }
}

TEST(TrainerOpPath, AdamWMatchesTheFusedLoop) {
  const AdamWOptions o{.lr = 0.01, .beta1 = 0.9, .beta2 = 0.99, .eps = 1e-8, .weight_decay = 0.1};
  for (DType dtype : {DType::Float32, DType::Float64})
    for (bool sharded : {false, true})
      expect_op_path_matches_loop<AdamW>(o, dtype, sharded,
                                         str_cat("adamw ", dtype_name(dtype), sharded ? " sharded" : ""));
}

TEST(TrainerOpPath, SgdMatchesTheFusedLoop) {
  const std::vector<SgdOptions> cases{{.lr = 0.1},
                                      {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01},
                                      {.lr = 0.05, .momentum = 0.9, .dampening = 0.3},
                                      {.lr = 0.05, .momentum = 0.8, .nesterov = true, .weight_decay = 0.02}};
  for (size_t c = 0; c < cases.size(); ++c)
    for (DType dtype : {DType::Float32, DType::Float64})
      for (bool sharded : {false, true})
        expect_op_path_matches_loop<Sgd>(cases[c], dtype, sharded,
                                         str_cat("sgd case ", c, " ", dtype_name(dtype), sharded ? " sharded" : ""));
}

TEST(TrainerOpPath, GradientNormAndClippingMatchTheFusedLoop) {
  const NamedParameters loop_params = op_path_params(DType::Float32), op_params = op_path_params(DType::Float32);
  set_step_grads(loop_params, 0);
  set_step_grads(op_params, 0);
  const GradNorm loop = grad_norm(loop_params), ops = grad_norm(op_params, UpdatePath::Ops);
  EXPECT_GT(loop.norm, 1.0);
  EXPECT_NEAR(ops.norm, loop.norm, 1e-12 * loop.norm);
  EXPECT_TRUE(ops.finite());

  const GradNorm loop_clip = clip_grad_norm(loop_params, 0.5);
  const GradNorm ops_clip = clip_grad_norm(op_params, 0.5, UpdatePath::Ops);
  EXPECT_NEAR(ops_clip.scale, loop_clip.scale, 1e-12);
  EXPECT_TRUE(ops_clip.clipped());
  for (size_t i = 0; i < loop_params.size(); ++i)
    expect_close_values(op_params[i].second.grad(), loop_params[i].second.grad(), loop_params[i].first);
  EXPECT_NEAR(grad_norm(op_params, UpdatePath::Ops).norm, 0.5, 1e-6);

  // A non-contiguous gradient, and the first non-finite one reported by name on both paths.
  for (const NamedParameters* params : {&loop_params, &op_params}) {
    ag::Variable w = (*params)[0].second, b = (*params)[1].second;
    w.set_grad(test::rand_t({5, 3}, 77).t());
    b.set_grad(from_vector(std::vector<float>{1, NAN, 2, 3, 4}, {5}));
  }
  const GradNorm loop_bad = grad_norm(loop_params), ops_bad = grad_norm(op_params, UpdatePath::Ops);
  EXPECT_EQ(loop_bad.nonfinite, "b");
  EXPECT_EQ(ops_bad.nonfinite, "b");
  for (const NamedParameters* params : {&loop_params, &op_params}) {
    ag::Variable b = (*params)[1].second;
    b.set_grad(zeros({5}));
  }
  EXPECT_NEAR(grad_norm(op_params, UpdatePath::Ops).norm, grad_norm(loop_params).norm, 1e-12);
}

}  // namespace
}  // namespace moh
