// The synthetic teacher-student task (see synthetic_task.h).
#include "trainers/synthetic_task.h"

#include <algorithm>
#include <numeric>

#include "autograd/autograd.h"
#include "core/factory.h"
#include "core/ops.h"
#include "layers/mlp.h"

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
        seed_(uint64_t(cfg.get_int("run.seed"))), shuffle_(seed_ ^ 0x5eed5eedULL) {
    Generator init(seed_);
    model_ = std::make_shared<Mlp>(
        MlpOptions{features_, cfg.get_int("model.hidden"), classes_, Activation::Gelu}, init);
    Generator teacher_gen(seed_ ^ (kTeacherStream << 56));
    teacher_ = normal({features_, classes_}, 0, 1, teacher_gen);
    reshuffle();
  }

  Module& model() override { return *model_; }

  MicroBatchLoss train_micro_batch(int64_t batch_size) override {
    std::vector<int64_t> ids;
    ids.reserve(size_t(batch_size));
    while (int64_t(ids.size()) < batch_size) {
      if (index_ == train_size_) {
        ++epoch_;
        index_ = 0;
        reshuffle();
      }
      ids.push_back(order_[size_t(index_++)]);
    }
    auto [x, y] = samples(ids, kTrainStream);
    ag::Variable logits = model_->forward(ag::Variable(x));
    return {ag::cross_entropy(logits, y), {}, batch_size, 0};
  }

  std::map<std::string, double> evaluate() override {
    ag::NoGradGuard no_grad;
    model_->eval();
    std::vector<int64_t> ids(static_cast<size_t>(eval_size_));
    std::iota(ids.begin(), ids.end(), 0);
    auto [x, y] = samples(ids, kEvalStream);
    Tensor logits = model_->forward(ag::Variable(x)).data();
    const double loss = cross_entropy(logits, y).loss.item<double>();
    const auto pred = argmax(logits, 1).to_vector<int64_t>(), truth = y.to_vector<int64_t>();
    int64_t correct = 0;
    for (size_t i = 0; i < pred.size(); ++i) correct += pred[i] == truth[i];
    model_->train();
    return {{"loss", loss}, {"top1", double(correct) / double(eval_size_)}};
  }

  int64_t samples_per_epoch() const override { return train_size_; }

  std::map<std::string, int64_t> data_state() const override {
    return {{"epoch", epoch_}, {"index", index_}, {"shuffle_seed", int64_t(shuffle_.seed())}};
  }

  void load_data_state(const std::map<std::string, int64_t>& state) override {
    for (const char* key : {"epoch", "index"})
      MOH_CHECK(state.count(key), "synthetic task: the checkpoint's data state has no '", key, "'");
    epoch_ = state.at("epoch");
    index_ = state.at("index");
    MOH_CHECK(index_ >= 0 && index_ <= train_size_, "synthetic task: data index ", index_,
              " is outside the epoch of ", train_size_, " samples");
    // The permutation of the current epoch is a function of (shuffle seed, epoch): rebuild it.
    reshuffle();
  }

  std::map<std::string, Generator*> generators() override { return {}; }

 private:
  // Permutation of epoch `epoch_`: Fisher-Yates driven by Philox words of (seed, epoch).
  void reshuffle() {
    order_.resize(size_t(train_size_));
    std::iota(order_.begin(), order_.end(), 0);
    Generator g(shuffle_.seed(), uint64_t(epoch_) << 32);
    auto words = uniform({train_size_}, 0, 1, g, DType::Float64).to_vector<double>();
    for (int64_t i = train_size_ - 1; i > 0; --i)
      std::swap(order_[size_t(i)], order_[size_t(std::min<int64_t>(i, int64_t(words[size_t(i)] * double(i + 1))))]);
  }

  // Features and teacher labels of the given sample ids of one stream.
  std::pair<Tensor, Tensor> samples(const std::vector<int64_t>& ids, uint64_t stream) const {
    const int64_t n = int64_t(ids.size());
    Tensor x = Tensor::empty({n, features_});
    for (int64_t i = 0; i < n; ++i) {
      Generator g(seed_ ^ (stream << 56), uint64_t(ids[size_t(i)]) * uint64_t(features_));
      x.select(0, i).copy_(normal({features_}, 0, 1, g));
    }
    Tensor y = argmax(matmul(x, teacher_), 1);
    return {x, y};
  }

  int64_t features_, classes_, train_size_, eval_size_;
  uint64_t seed_;
  Generator shuffle_;
  std::shared_ptr<Mlp> model_;
  Tensor teacher_;
  std::vector<int64_t> order_;
  int64_t epoch_ = 0, index_ = 0;
};

}  // namespace

TaskFamily synthetic_task_family() {
  return {"synthetic", "teacher-student MLP classification on generated data (smoke tests, no dataset)",
          synthetic_schema, [](const Config& cfg) { return std::make_unique<SyntheticTask>(cfg); }};
}

}  // namespace moh
