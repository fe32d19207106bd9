// The ViT classification task (see vit_task.h): config keys, model and data construction, the
// training micro-batch with label smoothing and Mixup/CutMix, and evaluation. The data pipeline and
// Mixup/CutMix run on the CPU; the model lives on the run's device and batches move there.
#include "trainers/vit_task.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "autograd/autograd.h"
#include "core/dist/world.h"
#include "core/io/hdf5_file.h"
#include "core/ops.h"
#include "data/mixup.h"
#include "models/vit/vit.h"
#include "trainers/attention_config.h"
#include "trainers/eval_shard.h"
#include "trainers/image_data_config.h"
#include "trainers/precision.h"

namespace moh {
namespace {

// Philox keys of the task's own generators, derived from run.seed.
constexpr uint64_t kInitKey = 0x1a17, kDropKey = 0xd409, kMixKey = 0x3b1c, kDataKey = 0xda7a;

config::Schema vit_schema() {
  using config::Key;
  config::Schema s;
  s.add(Key::Enum("model.preset", {"tiny", "deit_tiny", "deit_small", "deit_base"},
                  "named ViT size (models/vit/vit.h); the model.* keys below override its fields")
            .def("tiny"));
  s.add(Key::Int("model.patch_size", "patch side in pixels (the image size must be a multiple)").optional().min(1));
  s.add(Key::Int("model.dim", "token width").optional().min(1));
  s.add(Key::Int("model.depth", "number of transformer blocks").optional().min(1));
  s.add(Key::Int("model.heads", "attention heads per block (must divide model.dim)").optional().min(1));
  s.add(Key::Float("model.mlp_ratio", "Mlp hidden width / dim").optional().min(0));
  s.add(Key::Float("model.drop_path", "stochastic depth rate of the last block (linear from 0)").optional().range(0, 1));
  s.add(Key::Enum("model.pool", {"cls", "avg"}, "classify from the class token or the mean of the patch tokens")
            .def("cls"));
  s.add(Key::Enum("model.pos_embed", {"learned", "sincos"}, "learned or fixed 2-D sin-cos position embedding")
            .def("learned"));
  add_attention_keys(s);

  add_image_data_keys(s, ImageDataDefaults{});
  s.add(Key::Float("data.label_smoothing", "label smoothing of the training loss").def(0.0).range(0, 1));
  s.add(Key::Float("data.mixup", "Mixup Beta(a, a) parameter (0 = off)").def(0.0).min(0));
  s.add(Key::Float("data.cutmix", "CutMix Beta(a, a) parameter (0 = off)").def(0.0).min(0));
  s.add(Key::Float("data.mix_prob", "probability that a batch is mixed when mixup or cutmix is on").def(1.0).range(0, 1));
  s.add(Key::Float("data.mix_switch_prob", "with both on: probability of CutMix rather than Mixup").def(0.5).range(0, 1));
  s.add(Key::String("eval.predictions", "moh eval: also write per-sample logits and labels to this HDF5 file")
            .optional());
  return s;
}

class VitTask final : public Task {
 public:
  explicit VitTask(const Config& cfg)
      : seed_(uint64_t(cfg.get_int("run.seed"))),
        data_(make_image_source(cfg, PixelRange::Standardized, seed_ ^ kDataKey, warnings_)),
        dropout_gen_(std::make_shared<Generator>(seed_ ^ kDropKey)),
        mix_gen_(seed_ ^ kMixKey),
        label_smoothing_(cfg.get_float("data.label_smoothing")),
        eval_batch_(cfg.get_int("eval.batch_size")),
        // Every rank gathers the predictions of the whole held-out set; rank 0 alone writes them.
        predictions_(cfg.has("eval.predictions") ? cfg.get_string("eval.predictions") : ""),
        device_(training_device(cfg)) {
    mix_.mixup_alpha = cfg.get_float("data.mixup");
    mix_.cutmix_alpha = cfg.get_float("data.cutmix");
    mix_.prob = cfg.get_float("data.mix_prob");
    mix_.switch_prob = cfg.get_float("data.mix_switch_prob");
    options_ = vit_options_from_config(cfg, *data_);
    Generator init(seed_ ^ kInitKey);
    model_ = std::make_shared<VisionTransformer>(options_, init, dropout_gen_);
    model_->to(device_);
  }

  Module& model() override { return *model_; }

  MicroBatchLoss train_micro_batch(int64_t batch_size) override {
    ImageBatch batch = data_->next_train(batch_size);
    MixedBatch mixed{batch.images, batch.labels, 1.0};
    if (mix_.enabled()) mixed = mix_batch(batch.images, batch.labels, mix_, mix_gen_);
    VitOutput out = model_->forward(ag::Variable(mixed.images.to(device_)));
    ag::Variable loss = ag::cross_entropy(out.logits, batch.labels.to(device_), label_smoothing_);
    if (mixed.lam < 1.0)
      loss = ag::add(ag::mul(loss, mixed.lam),
                     ag::mul(ag::cross_entropy(out.logits, mixed.partner_labels.to(device_), label_smoothing_),
                             1.0 - mixed.lam));
    return {loss, std::move(out.balance_losses), batch_size, batch_size * model_->num_tokens()};
  }

  // Each rank evaluates its shard of the held-out set (trainers/eval_shard.h); the sums are reduced
  // over ranks, so every rank returns the metrics of the whole set.
  std::map<std::string, double> evaluate() override {
    ag::NoGradGuard no_grad;
    EvalModeGuard eval_mode(*model_);
    const int64_t n = data_->eval_size(), classes = int64_t(data_->class_names().size());
    const int64_t k = std::min<int64_t>(5, classes);
    const EvalShard shard = eval_shard(n);
    double loss_sum = 0;
    int64_t top1 = 0, topk = 0, done = 0;
    Tensor shard_logits = predictions_.empty() ? Tensor() : Tensor::empty({shard.size(), classes});
    Tensor shard_labels = predictions_.empty() ? Tensor() : Tensor::empty({shard.size()}, DType::Int64);
    data_->for_each_eval_batch(shard.begin, shard.end, eval_batch_, [&](const ImageBatch& batch) {
      const Tensor logits = model_->forward(ag::Variable(batch.images.to(device_))).logits.data();
      const int64_t b = batch.labels.shape()[0];
      loss_sum += cross_entropy(logits, batch.labels.to(device_), 0.0, -100, Reduction::Sum).loss.item<double>();
      const auto best = moh::topk(logits, k).indices.to_vector<int64_t>();
      const auto truth = batch.labels.to_vector<int64_t>();
      for (int64_t i = 0; i < b; ++i) {
        top1 += best[size_t(i * k)] == truth[size_t(i)];
        for (int64_t j = 0; j < k; ++j) topk += best[size_t(i * k + j)] == truth[size_t(i)];
      }
      if (shard_logits.defined()) {
        shard_logits.narrow(0, done, b).copy_(logits);
        shard_labels.narrow(0, done, b).copy_(batch.labels);
      }
      done += b;
    });
    std::vector<double> sums{loss_sum, double(top1), double(topk)};
    reduce_eval_sums(sums);
    if (shard_logits.defined()) {
      const Tensor all_logits = gather_eval_rows(shard_logits, n), all_labels = gather_eval_rows(shard_labels, n);
      if (dist::launch_env().rank == 0) write_predictions(all_logits, all_labels);
    }
    return {{"loss", sums[0] / double(n)},
            {"top1", sums[1] / double(n)},
            {str_cat("top", k), sums[2] / double(n)},
            {"active_heads", options_.attention.active_share(options_.depth, options_.heads)},
            {"samples", double(n)}};
  }

  int64_t samples_per_epoch() const override { return data_->train_size(); }
  std::map<std::string, int64_t> data_state() const override { return data_->state(); }
  void load_data_state(const std::map<std::string, int64_t>& state) override { data_->load_state(state); }
  std::map<std::string, Generator*> generators() override {
    return {{"dropout", dropout_gen_.get()}, {"mix", &mix_gen_}};
  }

 private:
  // Writes logits [N, C] and labels [N] (+ class names as an attribute) atomically: tmp file, rename.
  void write_predictions(const Tensor& logits, const Tensor& labels) const {
    const std::string tmp = predictions_ + ".tmp";
    try {
      Hdf5File f(tmp, Hdf5File::Mode::Create);
      f.write_tensor("logits", logits);
      f.write_tensor("labels", labels);
      std::string names;
      for (const std::string& c : data_->class_names()) names += (names.empty() ? "" : "\n") + c;
      f.set_attr_string("/", "class_names", names);
      f.close();  // the destructor would swallow a failed flush
      std::filesystem::rename(tmp, predictions_);
    } catch (const std::exception& e) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      MOH_FAIL("eval.predictions: cannot write '", predictions_, "': ", e.what());
    }
  }

  uint64_t seed_;
  std::unique_ptr<ImageSource> data_;
  std::shared_ptr<Generator> dropout_gen_;
  Generator mix_gen_;
  MixOptions mix_;
  double label_smoothing_;
  int64_t eval_batch_;
  std::string predictions_;
  VitOptions options_;
  Device device_;
  std::shared_ptr<VisionTransformer> model_;
};

}  // namespace

VitOptions vit_options_from_config(const Config& cfg, const ImageSource& data) {
  VitOptions o = vit_preset(cfg.get_string("model.preset"));
  o.img_size = data.image_size();
  o.in_chans = data.channels();
  o.num_classes = int64_t(data.class_names().size());
  if (cfg.has("model.patch_size")) o.patch_size = cfg.get_int("model.patch_size");
  if (cfg.has("model.dim")) o.dim = cfg.get_int("model.dim");
  if (cfg.has("model.depth")) o.depth = cfg.get_int("model.depth");
  if (cfg.has("model.heads")) o.heads = cfg.get_int("model.heads");
  if (cfg.has("model.mlp_ratio")) o.mlp_ratio = cfg.get_float("model.mlp_ratio");
  if (cfg.has("model.drop_path")) o.drop_path = cfg.get_float("model.drop_path");
  o.class_token = cfg.get_string("model.pool") == "cls";
  o.pos_embed = cfg.get_string("model.pos_embed") == "sincos" ? VitOptions::PosEmbed::SinCos
                                                               : VitOptions::PosEmbed::Learned;
  if (o.img_size % o.patch_size != 0)
    throw ConfigError(str_cat(cfg.origin("model.patch_size"), ": model.patch_size ", o.patch_size,
                              " does not divide the image size ", o.img_size));
  if (o.dim % o.heads != 0)
    throw ConfigError(str_cat(cfg.origin("model.heads"), ": model.heads ", o.heads, " does not divide model.dim ",
                              o.dim));
  o.attention = attention_spec_from_config(cfg, o.depth, o.heads);
  return o;
}

TaskFamily vit_task_family() {
  return {"vit", "ViT image classification with MHA or MoH attention (Fashion-MNIST or an image folder)", vit_schema,
          [](const Config& cfg) { return std::make_unique<VitTask>(cfg); }};
}

}  // namespace moh
