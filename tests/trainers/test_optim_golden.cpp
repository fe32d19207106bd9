// PyTorch golden run (tests/reference/make_optim_fixtures.py): six steps of torch.optim.AdamW with
// a no-decay group for the biases and a LambdaLR warmup-cosine schedule on a tiny float64 MLP.
// Replayed with our Linear layers, AdamW, lr_at and the hand-written MSE; every parameter after
// every step, and every step's lr, must match to 1e-10.
#include <gtest/gtest.h>

#include <string>

#include "core/io/safetensors.h"
#include "tests/core/nn_test_util.h"
#include "tests/test_paths.h"
#include "tests/trainers/trainer_test_util.h"
#include "trainers/adamw.h"
#include "trainers/schedule.h"

namespace moh {
namespace {

TEST(TrainerGolden, AdamWWithWarmupCosineMatchesTorch) {
  const std::string path = MOH_TEST_PATH(MOH_FIXTURE_DIR) + "/optim_adamw.safetensors";
  const auto f = load_safetensors(path);
  const auto meta = load_safetensors_metadata(path);
  ASSERT_EQ(meta.at("generator"), "tests/reference/make_optim_fixtures.py");
  auto hyper = [&](const char* key) { return std::stod(meta.at(key)); };

  trainer_test::TinyMlp model(3, 4, 2, DType::Float64, 0);
  StateDict init;
  for (const auto& [name, t] : f)
    if (name.starts_with("init.")) init[name.substr(5)] = t;
  model.load_state_dict(init);

  AdamW opt(model.named_parameters(), {.lr = hyper("lr"),
                                       .beta1 = hyper("beta1"),
                                       .beta2 = hyper("beta2"),
                                       .eps = hyper("eps"),
                                       .weight_decay = hyper("weight_decay")});
  for (const auto& p : opt.params()) EXPECT_EQ(p.decay, p.name.ends_with("weight")) << p.name;
  const ScheduleOptions sched{.kind = ScheduleKind::Cosine,
                              .base_lr = hyper("lr"),
                              .min_lr = hyper("min_lr"),
                              .warmup_steps = int64_t(hyper("warmup_steps")),
                              .total_steps = int64_t(hyper("total_steps"))};
  const std::vector<double> lrs = f.at("lr").to_vector<double>();
  const ag::Variable x(f.at("x"));
  ASSERT_EQ(lrs.size(), 6u);
  for (int64_t s = 0; s < 6; ++s) {
    opt.zero_grad();
    ag::backward(trainer_test::mse(model.forward(x), f.at("target")));
    opt.set_lr(lr_at(sched, s));
    EXPECT_NEAR(opt.lr(), lrs[size_t(s)], 1e-15) << "lr of step " << s;
    opt.step();
    const std::string prefix = "step" + std::to_string(s + 1) + ".";
    for (const auto& [name, p] : model.named_parameters())
      nn_test::expect_close(p.data(), f.at(prefix + name), 1e-10, prefix + name, 1e-12);
  }
}

}  // namespace
}  // namespace moh
