// The synthetic teacher-student task (see synthetic_task.h).
#include "trainers/synthetic_task.h"

#include <algorithm>
#include <numeric>

#include "autograd/autograd.h"
#include "core/factory.h"
#include "core/ops.h"
#include "data/epoch_sampler.h"
#include "layers/mlp.h"
#include "trainers/eval_shard.h"
#include "trainers/precision.h"

namespace moh {
namespace {

// Dataset streams: training and evaluation samples come from disjoint Philox streams of one seed.
constexpr uint64_t kTrainStream = 1, kEvalStream = 2, kTeacherStream = 3;

config::Schema synthetic_schema() {
  using config::Key;
  config::Schema s;
  s.add(Key::Int("data.features", "synthetic: input features per sample").def(16).min(1));
  s.add(Key::Int("data.classes", "synthetic: number of classes of the teacher").def(4).min(2));
  s.add(Key::Int("data.train_size", "synthetic: training samples per epoch").def(4096).min(1));
  s.add(Key::Int("data.eval_size", "synthetic: held-out samples").def(1024).min(1));
  s.add(Key::Int("model.hidden", "synthetic: hidden width of the MLP").def(64).min(1));
  return s;
}

class SyntheticTask final : public Task {
 public:
  explicit SyntheticTask(const Config& cfg)
      : features_(cfg.get_int("data.features")), classes_(cfg.get_int("data.classes")),
        train_size_(cfg.get_int("data.train_size")), eval_size_(cfg.get_int("data.eval_size")),
        eval_batch_(cfg.get_int("eval.batch_size")),
        seed_(uint64_t(cfg.get_int("run.seed"))), sampler_(train_size_, seed_ ^ 0x5eed5eedULL, "synthetic train"),
        device_(training_device(cfg)) {
    Generator init(seed_);
    model_ = std::make_shared<Mlp>(
        MlpOptions{features_, cfg.get_int("model.hidden"), classes_, Activation::Gelu}, init);
    model_->to(device_);
    Generator teacher_gen(seed_ ^ (kTeacherStream << 56));
    teacher_ = normal({features_, classes_}, 0, 1, teacher_gen);
  }

  Module& model() override { return *model_; }

  MicroBatchLoss train_micro_batch(int64_t batch_size) override {
    auto [x, y] = samples(sampler_.next(batch_size), kTrainStream);
    ag::Variable logits = model_->forward(ag::Variable(x));
    return {ag::cross_entropy(logits, y), {}, batch_size, 0};
  }

  // This rank's shard of the held-out set in batches of eval.batch_size, the sums reduced over ranks.
  std::map<std::string, double> evaluate() override {
    ag::NoGradGuard no_grad;
    EvalModeGuard eval_mode(*model_);
    const EvalShard shard = eval_shard(eval_size_);
    std::vector<double> sums{0, 0};  // loss, correct
    for (int64_t start = shard.begin; start < shard.end; start += eval_batch_) {
      std::vector<int64_t> ids(size_t(std::min(eval_batch_, shard.end - start)));
      std::iota(ids.begin(), ids.end(), start);
      auto [x, y] = samples(ids, kEvalStream);
      Tensor logits = model_->forward(ag::Variable(x)).data();
      sums[0] += cross_entropy(logits, y, 0.0, -100, Reduction::Sum).loss.item<double>();
      const auto pred = argmax(logits, 1).to_vector<int64_t>(), truth = y.to_vector<int64_t>();
      for (size_t i = 0; i < pred.size(); ++i) sums[1] += pred[i] == truth[i];
    }
    reduce_eval_sums(sums);
    return {{"loss", sums[0] / double(eval_size_)}, {"top1", sums[1] / double(eval_size_)}};
  }

  int64_t samples_per_epoch() const override { return train_size_; }

  std::map<std::string, int64_t> data_state() const override { return sampler_.state(); }
  void load_data_state(const std::map<std::string, int64_t>& state) override { sampler_.load_state(state); }

  std::map<std::string, Generator*> generators() override { return {}; }

 private:
  // Features and teacher labels of the given sample ids of one stream, on the run's device.
  std::pair<Tensor, Tensor> samples(const std::vector<int64_t>& ids, uint64_t stream) const {
    const int64_t n = int64_t(ids.size());
    Tensor x = Tensor::empty({n, features_});
    for (int64_t i = 0; i < n; ++i) {
      Generator g(seed_ ^ (stream << 56), uint64_t(ids[size_t(i)]) * uint64_t(features_));
      x.select(0, i).copy_(normal({features_}, 0, 1, g));
    }
    Tensor y = argmax(matmul(x, teacher_), 1);
    return {x.to(device_), y.to(device_)};
  }

  int64_t features_, classes_, train_size_, eval_size_, eval_batch_;
  uint64_t seed_;
  EpochSampler sampler_;
  Device device_;
  std::shared_ptr<Mlp> model_;
  Tensor teacher_;
};

}  // namespace

TaskFamily synthetic_task_family() {
  return {"synthetic", "teacher-student MLP classification on generated data (smoke tests, no dataset)",
          synthetic_schema, [](const Config& cfg) { return std::make_unique<SyntheticTask>(cfg); }};
}

}  // namespace moh
