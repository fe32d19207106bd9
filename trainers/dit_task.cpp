// The DiT task (see dit_task.h): config keys, the latent sources and the model,
// the training micro-batch and the held-out evaluation with per-sample fixed
// draws.
#include "trainers/dit_task.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "autograd/autograd.h"
#include "core/dist/world.h"
#include "core/factory.h"
#include "core/io/checked_write.h"
#include "core/ops.h"
#include "data/epoch_sampler.h"
#include "data/image_grid.h"
#include "data/latent_source.h"
#include "models/dit/diffusion_loss.h"
#include "trainers/attention_config.h"
#include "trainers/classifier_features.h"
#include "trainers/dit_images.h"
#include "trainers/eval_shard.h"
#include "trainers/frechet_distance.h"
#include "trainers/precision.h"
#include "trainers/stored_autoencoder.h"

namespace moh {
namespace {

// Philox keys of the task's own generators, derived from run.seed.
constexpr uint64_t kInitKey = 0xd117, kNoiseKey = 0xd15e, kLabelDropKey = 0xd1d0, kOrderKey = 0xd10d, kEvalKey = 0xd1e5,
                   kSampleKey = 0xd15a;

config::Schema dit_schema() {
  using config::Key;
  config::Schema s;
  s.add(Key::Enum("model.preset", {"fmnist", "DiT-S/2", "DiT-B/2", "DiT-L/2", "DiT-XL/2"},
                  "named DiT size (models/dit/dit.h); the model.* keys below override its fields. The latent size, "
                  "channels and class count always come from data.latents")
            .def("fmnist"));
  s.add(Key::Int("model.patch_size", "patch side in latent pixels (must divide the latent side)").optional().min(1));
  s.add(Key::Int("model.dim", "token width (DiT's hidden_size; a multiple of 4 and of model.heads)").optional().min(4));
  s.add(Key::Int("model.depth", "number of DiT blocks").optional().min(1));
  s.add(Key::Int("model.heads", "attention heads per block (must divide model.dim unless model.head_dim is set)")
            .optional()
            .min(1));
  s.add(Key::Int("model.head_dim", "width of one head (0 = model.dim / the block's heads; MoH-DiT-L/XL: 64, 72)")
            .optional()
            .min(0));
  s.add(Key::Float("model.mlp_ratio", "Mlp hidden width / dim").optional().min(0));
  s.add(Key::Float(
            "model.class_dropout",
            "probability that a training label is replaced by the null class (classifier-free guidance needs it > 0)")
            .def(0.1)
            .range(0, 0.99));
  add_attention_keys(s);
  s.add(Key::Int("diffusion.steps", "steps of the diffusion process the model is trained on").def(1000).min(2));
  s.add(Key::Enum("diffusion.schedule", {"linear", "cosine"},
                  "beta schedule: linear 1e-4..0.02 (scaled to diffusion.steps, DiT's) or cosine (Nichol & Dhariwal)")
            .def("linear"));
  s.add(Key::Enum("diffusion.loss", {"mse", "rescaled_mse"},
                  "mse + vb (DiT's) or mse + vb * steps / 1000 (improved-diffusion's rescaled_mse)")
            .def("mse"));
  s.add(Key::String(
      "data.latents",
      "training latents: an HDF5 latent file of moh encode or a fast-DiT feature folder (docs/latents.md)"));
  s.add(Key::String("data.eval_latents", "held-out latents of the same shape and classes (default: data.latents)")
            .optional());
  s.add(Key::Float("data.scale_factor",
                   "multiply stored latents by this instead of the factor the latent file states (fast-DiT folders: 1)")
            .optional()
            .min(1e-12));
  s.add(Key::String("data.autoencoder",
                    "the autoencoder run (or checkpoint) whose latents data.latents holds: moh sample and "
                    "eval.samples decode with it")
            .optional());
  s.add(Key::Int("data.eval_limit", "evaluate only the first N held-out latents (0 = all)").def(0).min(0));
  s.add(Key::Int("eval.samples",
                 "images generated at each evaluation (labels cycling through the classes; 0 = none): a grid of the "
                 "first 100 (samples.png in the run folder, or beside the checkpoint for moh eval) and, with "
                 "eval.fid_classifier, their FID and sample accuracy; needs data.autoencoder")
            .def(0)
            .range(0, 1000000));
  s.add(Key::Int("eval.sample_steps", "DDIM steps of the evaluation samples").def(50).min(1));
  s.add(Key::Float("eval.sample_cfg", "classifier-free guidance scale of the evaluation samples (1 = none)")
            .def(1.5)
            .min(0));
  s.add(Key::String("eval.fid_classifier",
                    "a vit run (or checkpoint) scoring the evaluation samples: fid against its test split at the "
                    "samples' N, fid_floor (as many of its training images), fid_ceiling (as many noise images), "
                    "sample_accuracy (its top-1 on the classes asked for); samples are cropped to its image size")
            .optional());
  return s;
}

std::unique_ptr<LatentSource> open_latents(const Config& cfg, const char* key) {
  LatentSourceOptions options;
  if (cfg.has("data.scale_factor")) options.scale_factor = cfg.get_float("data.scale_factor");
  try {
    return open_latent_source(cfg.get_string(key), options);
  } catch (const Error& e) {
    throw ConfigError(str_cat(cfg.origin(key), ": ", key, ": ", e.what()));
  }
}

class DitTask final : public Task {
 public:
  explicit DitTask(const Config& cfg)
      : seed_(uint64_t(cfg.get_int("run.seed"))),
        train_(open_latents(cfg, "data.latents")),
        eval_(cfg.has("data.eval_latents") ? open_latents(cfg, "data.eval_latents") : nullptr),
        sampler_(train_->size(), seed_ ^ kOrderKey, "dit latents " + train_->path()),
        noise_gen_(seed_ ^ kNoiseKey),
        label_drop_gen_(std::make_shared<Generator>(seed_ ^ kLabelDropKey)),
        process_(diffusion_options_from_config(cfg)),
        diffusion_(GaussianDiffusion::create(process_)),
        loss_type_(cfg.get_string("diffusion.loss") == "mse" ? DiffusionLossType::Mse : DiffusionLossType::RescaledMse),
        eval_batch_(cfg.get_int("eval.batch_size")),
        eval_limit_(cfg.get_int("data.eval_limit")),
        samples_(cfg.get_int("eval.samples")),
        device_(training_device(cfg)) {
    const Shape& shape = train_->latent_shape();
    if (shape[1] != shape[2])
      throw ConfigError(str_cat(cfg.origin("data.latents"), ": data.latents: DiT needs square latents, '",
                                train_->path(), "' holds ", shape[1], " x ", shape[2]));
    if (eval_ && (eval_->latent_shape() != shape || eval_->num_classes() != train_->num_classes()))
      throw ConfigError(str_cat(cfg.origin("data.eval_latents"), ": data.eval_latents '", eval_->path(), "' holds ",
                                eval_->latent_shape(), " latents of ", eval_->num_classes(), " classes, data.latents '",
                                train_->path(), "' ", shape, " of ", train_->num_classes()));
    if (eval_ && eval_->scale_factor() != train_->scale_factor() && !cfg.has("data.scale_factor"))
      warnings_.warn(str_cat("data.eval_latents states scale factor ", eval_->scale_factor(), ", data.latents ",
                             train_->scale_factor(),
                             ": each is scaled by its own (set data.scale_factor to force one)"));
    options_ = dit_options_from_config(cfg, shape[0], shape[1], train_->num_classes());
    Generator init(seed_ ^ kInitKey);
    model_ = std::make_shared<DiT>(options_, init, label_drop_gen_);
    model_->to(device_);
    flops_ = model_->forward_flops_per_sample();
    if (samples_ > 0) open_sample_scorers(cfg);
  }

  Module& model() override { return *model_; }

  MicroBatchLoss train_micro_batch(int64_t batch_size) override {
    const LatentBatch batch = train_->read(sampler_.next(batch_size));
    const Tensor x_start = mul(batch.latents.to(device_), train_->scale_factor());
    const Tensor t = uniform_timesteps(batch_size, diffusion_.num_timesteps(), noise_gen_, device_);
    const Tensor noise = normal(x_start.shape(), 0.0, 1.0, noise_gen_, x_start.dtype(), device_);
    const Tensor x_t = diffusion_.q_sample(x_start, t, noise);
    DitOutput out = model_->forward(ag::Variable(x_t), t, batch.labels.to(device_));
    const DiffusionLosses losses = training_losses(diffusion_, out.out, x_start, x_t, t, noise, loss_type_);
    return {ag::mean(losses.loss), std::move(out.balance_losses), batch_size, batch_size * options_.num_tokens()};
  }

  // Held-out latent i is noised at its own timestep with its own noise, both
  // drawn from sample_generator(eval seed, 0, i): the same draws on every rank
  // count and at every evaluation.
  std::map<std::string, double> evaluate() override {
    ag::NoGradGuard no_grad;
    EvalModeGuard eval_mode(*model_);
    const LatentSource& source = eval_ ? *eval_ : *train_;
    const int64_t n = eval_limit_ > 0 ? std::min(eval_limit_, source.size()) : source.size();
    const EvalShard shard = eval_shard(n);
    const Shape& shape = source.latent_shape();
    std::vector<double> sums(3, 0.0);  // loss, mse, vb
    for (int64_t first = shard.begin; first < shard.end; first += eval_batch_) {
      const int64_t b = std::min(eval_batch_, shard.end - first);
      std::vector<int64_t> indices(static_cast<size_t>(b)), steps(static_cast<size_t>(b));
      std::vector<Tensor> noises;
      for (int64_t j = 0; j < b; ++j) {
        indices[size_t(j)] = first + j;
        Generator gen = sample_generator(seed_ ^ kEvalKey, 0, first + j);
        steps[size_t(j)] = uniform_timesteps(1, diffusion_.num_timesteps(), gen).item<int64_t>();
        noises.push_back(normal({1, shape[0], shape[1], shape[2]}, 0.0, 1.0, gen));
      }
      const LatentBatch batch = source.read(indices);
      const Tensor x_start = mul(batch.latents.to(device_), source.scale_factor());
      const Tensor t = from_vector<int64_t>(steps, {b}, DType::Int64, device_);
      const Tensor noise = cat(noises, 0).to(device_);
      const Tensor x_t = diffusion_.q_sample(x_start, t, noise);
      const ag::Variable out = model_->forward(ag::Variable(x_t), t, batch.labels.to(device_)).out;
      const DiffusionLosses losses = training_losses(diffusion_, out, x_start, x_t, t, noise, loss_type_);
      sums[0] += sum(losses.loss.data()).item<double>();
      sums[1] += sum(losses.mse.data()).item<double>();
      sums[2] += sum(losses.vb.data()).item<double>();
    }
    reduce_eval_sums(sums);
    MOH_CHECK(n > 0, "dit eval: the held-out latents '", source.path(), "' are empty");
    std::map<std::string, double> metrics{
        {"loss", sums[0] / double(n)},
        {"mse", sums[1] / double(n)},
        {"vb", sums[2] / double(n)},
        {"samples", double(n)},
        {"active_heads", options_.attention.active_share(options_.depth, options_.heads)}};
    if (samples_ > 0) metrics.merge(score_samples());
    return metrics;
  }

  void set_output_dir(const std::string& dir) override { output_dir_ = dir; }

  std::map<std::string, double> train_log_fields() const override {
    const double tokens = double(options_.num_tokens());
    return {{"active_heads", options_.attention.active_share(options_.depth, options_.heads)},
            {"flops_per_token", 3 * flops_.active / tokens},
            {"flops_per_token_dense", 3 * flops_.dense / tokens}};
  }

  int64_t samples_per_epoch() const override { return train_->size(); }
  std::map<std::string, int64_t> data_state() const override { return sampler_.state(); }
  void load_data_state(const std::map<std::string, int64_t>& state) override { sampler_.load_state(state); }
  std::map<std::string, Generator*> generators() override {
    return {{"noise", &noise_gen_}, {"label_dropout", label_drop_gen_.get()}};
  }

 private:
  // The autoencoder that decodes evaluation samples and, with eval.fid_classifier, the network scoring them.
  void open_sample_scorers(const Config& cfg) {
    if (!cfg.has("data.autoencoder"))
      throw ConfigError(str_cat(cfg.origin("eval.samples"),
                                ": eval.samples needs data.autoencoder (the run that decodes the latents)"));
    const char* key = "data.autoencoder";
    try {
      autoencoder_ =
          std::make_unique<StoredAutoencoder>(load_stored_autoencoder(cfg.get_string(key), {}, {}, "data.autoencoder"));
      autoencoder_->model->to(device_);
      key = "eval.fid_classifier";
      if (cfg.has(key))
        classifier_ = std::make_unique<FeatureClassifier>(cfg.get_string(key), std::vector<std::string>{}, eval_batch_,
                                                          "eval.fid_classifier");
    } catch (const ConfigError&) {
      throw;
    } catch (const Error& e) {
      throw ConfigError(str_cat(cfg.origin(key), ": ", key, ": ", e.what()));
    }
    if (classifier_ && samples_ < 2)
      throw ConfigError(str_cat(cfg.origin("eval.samples"), ": eval.fid_classifier needs eval.samples >= 2"));
    sample_options_.steps = cfg.get_int("eval.sample_steps");
    sample_options_.loop.sampler = DiffusionSampler::Ddim;
    sample_options_.guidance.scale = cfg.get_float("eval.sample_cfg");
    sample_options_.crop = classifier_ ? classifier_->image_size() : 0;
    sample_options_.batch = eval_batch_;
    if (sample_options_.steps > process_.steps)
      throw ConfigError(str_cat(cfg.origin("eval.sample_steps"), ": eval.sample_steps ", sample_options_.steps,
                                " is more than diffusion.steps ", process_.steps));
    if (sample_options_.guidance.scale != 1.0 && options_.class_dropout_prob == 0)
      throw ConfigError(str_cat(cfg.origin("eval.sample_cfg"), ": eval.sample_cfg ", sample_options_.guidance.scale,
                                " needs model.class_dropout > 0 (the null class); use 1"));
  }

  // eval.samples images from the model as it is now (the EMA weights under eval.use_ema), from the same
  // noise at every evaluation; the ranks draw a share of the batches each and gather them all (the same
  // images for any rank count), rank 0 writes the grid.
  std::map<std::string, double> score_samples() {
    std::vector<int64_t> labels(static_cast<size_t>(samples_));
    for (int64_t i = 0; i < samples_; ++i) labels[size_t(i)] = i % options_.num_classes;
    const Tensor y = from_vector<int64_t>(labels, {samples_});
    const Tensor images = sample_dit_images(*model_, process_, *autoencoder_->model, train_->scale_factor(), y,
                                            sample_options_, seed_ ^ kSampleKey);
    if (!output_dir_.empty() && dist::launch_env().rank == 0) {
      const Image grid = image_grid(images.narrow(0, 0, std::min<int64_t>(samples_, 100)),
                                    std::min<int64_t>(options_.num_classes, 10), -1.0, 1.0);
      const std::vector<uint8_t> png = encode_png(grid);
      write_file_atomically((std::filesystem::path(output_dir_) / "samples.png").string(),
                            std::string(png.begin(), png.end()));
    }
    if (!classifier_) return {};
    if (!reference_) {  // once per task: the test split's statistics, the floor and the ceiling at this N
      reference_ = classifier_->of_split("test", 0).stats;
      fid_floor_ = frechet_distance(classifier_->of_split("train", samples_).stats, *reference_);
      fid_ceiling_ = frechet_distance(classifier_->of_noise(samples_).stats, *reference_);
    }
    const ClassifierFeatures f = classifier_->of_images(images_to_uint8_nhwc(images, -1.0, 1.0), y, "the samples");
    return {{"fid", frechet_distance(f.stats, *reference_)},
            {"fid_floor", fid_floor_},
            {"fid_ceiling", fid_ceiling_},
            {"sample_accuracy", f.top1}};
  }

  uint64_t seed_;
  std::unique_ptr<LatentSource> train_, eval_;
  EpochSampler sampler_;
  Generator noise_gen_;
  std::shared_ptr<Generator> label_drop_gen_;
  DiffusionOptions process_;     // the trained process (sampling respaces it)
  GaussianDiffusion diffusion_;  // built from process_
  DiffusionLossType loss_type_;
  int64_t eval_batch_, eval_limit_, samples_;
  Device device_;
  std::string output_dir_;
  std::unique_ptr<StoredAutoencoder> autoencoder_;
  std::unique_ptr<FeatureClassifier> classifier_;
  DitImageOptions sample_options_;
  std::optional<FeatureStats> reference_;
  double fid_floor_ = 0, fid_ceiling_ = 0;
  DitOptions options_;
  std::shared_ptr<DiT> model_;
  DiT::Flops flops_;
};

}  // namespace

DitOptions dit_options_from_config(const Config& cfg, int64_t channels, int64_t side, int64_t num_classes) {
  DitOptions o = dit_preset(cfg.get_string("model.preset"));
  o.in_channels = channels;
  o.input_size = side;
  o.num_classes = num_classes;
  if (cfg.has("model.patch_size")) o.patch_size = cfg.get_int("model.patch_size");
  if (cfg.has("model.dim")) o.dim = cfg.get_int("model.dim");
  if (cfg.has("model.depth")) o.depth = cfg.get_int("model.depth");
  if (cfg.has("model.heads")) o.heads = cfg.get_int("model.heads");
  if (cfg.has("model.head_dim")) o.head_dim = cfg.get_int("model.head_dim");
  if (cfg.has("model.mlp_ratio")) o.mlp_ratio = cfg.get_float("model.mlp_ratio");
  o.class_dropout_prob = cfg.get_float("model.class_dropout");
  if (side % o.patch_size != 0)
    throw ConfigError(str_cat(cfg.origin("model.patch_size"), ": model.patch_size ", o.patch_size,
                              " does not divide the latent side ", side, " of data.latents"));
  if ((o.head_dim == 0 && o.dim % o.heads != 0) || o.dim % 4 != 0)
    throw ConfigError(str_cat(cfg.origin(cfg.has("model.heads") ? "model.heads" : "model.dim"), ": model.dim ", o.dim,
                              " must be a multiple of 4 and of model.heads ", o.heads,
                              " (unless model.head_dim is set)"));
  o.attention = attention_spec_from_config(cfg, o.depth, o.heads);
  try {
    o.validate();
  } catch (const Error& e) {
    throw ConfigError(str_cat(cfg.origin("model.preset"), ": the model.* keys do not make a DiT: ", e.what()));
  }
  return o;
}

DiffusionOptions diffusion_options_from_config(const Config& cfg) {
  DiffusionOptions o;
  o.steps = cfg.get_int("diffusion.steps");
  o.schedule = parse_beta_schedule(cfg.get_string("diffusion.schedule"));
  return o;
}

TaskFamily dit_task_family() {
  return {"dit", "DiT class-conditional latent diffusion with MHA or MoH attention (latents of moh encode)", dit_schema,
          [](const Config& cfg) { return std::make_unique<DitTask>(cfg); }};
}

}  // namespace moh
