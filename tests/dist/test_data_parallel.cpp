// DataParallel on however many ranks the binary runs (1, or 2 under mpirun): after a step every
// rank holds the average over ranks of the per-rank gradients (recomputed here on one process from
// each rank's input), also with several buckets, gradient accumulation and a parameter that only
// some ranks' backward reaches; broadcast_state copies rank 0's weights and rejects ranks at
// different steps. Sharded (ZeRO-1), clipped AdamW steps equal one whole optimizer stepping on the
// average gradient, and the gathered optimizer state equals its state. check_same_job stops ranks
// whose configs or step counts differ, naming the difference on rank 0.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/autograd.h"
#include "core/dist/world.h"
#include "core/factory.h"
#include "layers/linear.h"
#include "tests/test_util.h"
#include "trainers/adamw.h"
#include "trainers/data_parallel.h"
#include "trainers/trainer.h"

namespace moh {
namespace {

// fc2(tanh(fc1(x))) plus `extra`, a parameter the loss uses only when asked.
class Net : public Module {
 public:
  explicit Net(uint64_t seed) {
    Generator gen(seed);
    fc1 = register_module("fc1", std::make_shared<Linear>(LinearOptions{.in_features = 6, .out_features = 40}, gen));
    fc2 = register_module("fc2", std::make_shared<Linear>(LinearOptions{.in_features = 40, .out_features = 3}, gen));
    extra = register_parameter("extra", uniform({3}, -1, 1, gen));
  }
  std::string type_name() const override { return "Net"; }
  ag::Variable loss(const Tensor& x, bool use_extra) const {
    ag::Variable y = fc2->forward(ag::tanh(fc1->forward(ag::Variable(x))));
    if (use_extra) y = ag::mul(y, extra);
    return ag::mean(ag::mul(y, y));
  }
  std::shared_ptr<Linear> fc1, fc2;
  ag::Variable extra;
};

Tensor input(int rank, int micro) { return test::rand_t({5, 6}, 100 + 10 * uint64_t(rank) + uint64_t(micro)); }
bool uses_extra(int rank) { return rank == 0; }

// The step's gradient of rank r, on a private replica: sum over micro-batches of loss / micros.
std::map<std::string, std::vector<double>> local_grads(int rank, int micros) {
  Net net(7);
  for (int m = 0; m < micros; ++m) ag::backward(ag::div(net.loss(input(rank, m), uses_extra(rank)), double(micros)));
  std::map<std::string, std::vector<double>> out;
  for (auto& [name, p] : net.named_parameters())
    out[name] = p.grad().defined() ? p.grad().to_vector<double>() : std::vector<double>(size_t(p.numel()), 0.0);
  return out;
}

class DataParallelTest : public ::testing::TestWithParam<int> {};  // micro-batches per step

TEST_P(DataParallelTest, GradientsAreTheAverageOverRanks) {
  dist::Communicator& comm = dist::world();
  const int micros = GetParam();
  Net net(7);
  DataParallel dp(net, comm, {.bucket_mb = 0.0005, .global_balance = false});  // 512 bytes: several buckets
  for (int step = 0; step < 2; ++step) {
    for (auto& [name, p] : net.named_parameters()) p.zero_grad();
    for (int m = 0; m < micros; ++m) {
      dp.begin_micro_batch(m + 1 == micros);
      ag::backward(ag::div(net.loss(input(comm.rank(), m), uses_extra(comm.rank())), double(micros)));
    }
    dp.finish_gradients();
    std::map<std::string, std::vector<double>> want;
    for (int r = 0; r < comm.size(); ++r)
      for (auto& [name, g] : local_grads(r, micros)) {
        auto& w = want[name];
        w.resize(g.size(), 0.0);
        for (size_t i = 0; i < g.size(); ++i) w[i] += g[i] / comm.size();
      }
    for (auto& [name, p] : net.named_parameters()) {
      ASSERT_TRUE(p.grad().defined()) << name;
      const std::vector<double> got = p.grad().to_vector<double>();
      for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[name][i], 1e-6) << name << "[" << i << "]";
    }
  }
  EXPECT_EQ(dp.stats().steps, comm.size() > 1 ? 2 : 0);
  if (comm.size() > 1) EXPECT_GT(dp.stats().buckets, 2 * 2);
}

// The average over ranks of the one-micro-batch gradients at `at`'s weights, set as its gradients.
void set_average_gradients(Net& at, int ranks) {
  std::map<std::string, std::vector<double>> sum;
  for (int r = 0; r < ranks; ++r) {
    Net replica(7);
    replica.load_state_dict(at.state_dict());
    ag::backward(replica.loss(input(r, 0), uses_extra(r)));
    for (auto& [name, p] : replica.named_parameters()) {
      auto& s = sum[name];
      s.resize(size_t(p.numel()), 0.0);
      if (!p.grad().defined()) continue;
      const std::vector<double> g = p.grad().to_vector<double>();
      for (size_t i = 0; i < g.size(); ++i) s[i] += g[i] / ranks;
    }
  }
  for (auto& [name, p] : at.named_parameters()) p.set_grad(from_vector(sum[name], p.shape(), p.dtype()));
}

TEST(DataParallel, ShardedOptimizerStepsLikeOneWholeOptimizer) {
  dist::Communicator& comm = dist::world();
  const AdamWOptions adam{.lr = 0.05, .weight_decay = 0.1};
  Net net(7), reference(7);
  AdamW opt(net.named_parameters(), adam), reference_opt(reference.named_parameters(), adam);
  DataParallel dp(net, comm, {.bucket_mb = 0.0005, .shard_optimizer = true});
  dp.shard(opt);
  EXPECT_EQ(dp.sharded(), comm.size() > 1);
  if (comm.size() > 1) EXPECT_LT(opt.state_bytes(), reference_opt.state_bytes() * 3 / 4);
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    dp.begin_micro_batch(true);
    ag::backward(net.loss(input(comm.rank(), 0), uses_extra(comm.rank())));
    dp.finish_gradients();
    const GradNorm norm = dp.clip_gradients(net.named_parameters(), 0.1);
    opt.step();
    dp.finish_step();

    set_average_gradients(reference, comm.size());
    const GradNorm want = clip_grad_norm(reference.named_parameters(), 0.1);
    reference_opt.step();
    reference_opt.zero_grad();
    EXPECT_NEAR(norm.norm, want.norm, 1e-6 * want.norm) << "step " << step;
    EXPECT_TRUE(norm.clipped()) << "step " << step << " norm " << norm.norm;
    for (auto& [name, t] : reference.state_dict()) {
      const std::vector<double> got = net.state_dict().at(name).to_vector<double>(), w = t.to_vector<double>();
      for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(got[i], w[i], 1e-6) << name << "[" << i << "] step " << step;
    }
  }
  const auto state = dp.optimizer_state(opt), want = reference_opt.state_dict();
  ASSERT_EQ(state.size(), want.size());
  for (const auto& [key, t] : want) {
    ASSERT_TRUE(state.count(key)) << key;
    ASSERT_EQ(state.at(key).shape(), t.shape()) << key;
    const std::vector<double> got = state.at(key).to_vector<double>(), w = t.to_vector<double>();
    for (size_t i = 0; i < w.size(); ++i)
      EXPECT_NEAR(got[i], w[i], 1e-6 + 1e-5 * std::abs(w[i])) << key << "[" << i << "]";
  }
}

TEST(DataParallel, ShardedGradientNormReportsANonFiniteGradientOnAnyRank) {
  dist::Communicator& comm = dist::world();
  Net net(7);
  AdamW opt(net.named_parameters(), {});
  DataParallel dp(net, comm, {.bucket_mb = 0.0005, .shard_optimizer = true});
  dp.shard(opt);
  dp.begin_micro_batch(true);
  // The last rank's backward overflows: its gradients are inf or nan.
  const double scale = comm.rank() == comm.size() - 1 ? INFINITY : 1.0;
  ag::backward(ag::mul(net.loss(input(comm.rank(), 0), true), scale));
  dp.finish_gradients();
  const GradNorm norm = dp.clip_gradients(net.named_parameters(), 1.0);
  EXPECT_EQ(norm.nonfinite, net.named_parameters().front().first);  // the first, wherever it lives
  EXPECT_FALSE(std::isfinite(norm.norm));
  EXPECT_FALSE(norm.clipped());
}

INSTANTIATE_TEST_SUITE_P(MicroBatches, DataParallelTest, ::testing::Values(1, 3));

TEST(DataParallel, BroadcastStateCopiesRankZeroAndChecksTheStep) {
  dist::Communicator& comm = dist::world();
  Net net(7 + uint64_t(comm.rank()));  // different weights on every rank
  DataParallel dp(net, comm, {});
  dp.broadcast_state(5);
  Net reference(7);
  for (auto& [name, t] : reference.state_dict())
    EXPECT_EQ(net.state_dict().at(name).to_vector<double>(), t.to_vector<double>()) << name;
  if (comm.size() > 1)
    test::expect_error([&] { dp.broadcast_state(comm.rank() == 1 ? 4 : 5); },
                       {"rank 1 is at step 4 but rank 0 at step 5", "same checkpoint"});
}

// The start-up agreement (trainers/same_job.h), collectively on every rank: equal jobs pass (and
// `threads` may differ); another key or another step count throws a ConfigError on every rank,
// rank 0's naming the key with both values, or both step counts.
TEST(DataParallel, CheckSameJobNamesTheFirstDifferenceOnRankZero) {
  dist::Communicator& comm = dist::world();
  const int rank = comm.rank();
  const std::string yaml = "task: synthetic\nrun: {name: same}\ntrain: {steps: 10}\n";
  auto config = [&](std::vector<std::string> overrides) {
    return Config::parse(yaml, training_schema("synthetic"), "test", overrides);
  };
  Net net(7);
  DataParallel dp(net, comm, {});
  dp.check_same_job(config({"threads=" + std::to_string(rank + 1)}), 10);
  if (comm.size() == 1) return;
  const std::vector<std::string> on_rank1 = {"rank 1 stops: the ranks do not run the same job"};
  test::expect_error<ConfigError>(
      [&] { dp.check_same_job(config({rank == 1 ? "optim.lr=0.02" : "optim.lr=0.01", "data.classes=3"}), 10); },
      rank == 0 ? std::vector<std::string>{"the ranks do not run the same job: optim.lr is 0.01 on rank 0 but 0.02 "
                                           "on rank 1; rank 1 differs from rank 0"}
                : on_rank1);
  test::expect_error<ConfigError>(
      [&] { dp.check_same_job(config({}), 10 + rank); },
      rank == 0 ? std::vector<std::string>{"rank 0 trains 10 steps but rank 1 trains 11 with the same config"}
                : on_rank1);
}

}  // namespace
}  // namespace moh
