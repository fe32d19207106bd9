// The autoencoder task (see autoencoder_task.h): config keys, model and data construction, the
// training micro-batch, evaluation with PSNR and the reconstruction grid.
#include "trainers/autoencoder_task.h"

#include <cmath>
#include <filesystem>

#include "autograd/autograd.h"
#include "core/dist/world.h"
#include "core/factory.h"
#include "core/io/checked_write.h"
#include "core/ops.h"
#include "data/image_grid.h"
#include "trainers/eval_shard.h"
#include "trainers/image_data_config.h"
#include "trainers/precision.h"

namespace moh {
namespace {

// Philox keys of the task's own generators, derived from run.seed.
constexpr uint64_t kInitKey = 0xae17, kNoiseKey = 0xae5a, kDataKey = 0xaeda;

config::Schema autoencoder_schema() {
  using config::Key;
  config::Schema s;
  s.add(Key::Enum("model.preset", {"fmnist", "sd"},
                  "named autoencoder size (models/autoencoder/autoencoder_options.h); the model.* keys below "
                  "override its fields")
            .def("fmnist"));
  s.add(Key::Int("model.base_channels", "channels of the first level (SD's ch)").optional().min(1));
  s.add(Key::IntList("model.channel_mult", "channel multiplier per level (SD's ch_mult); f = 2^(levels - 1)")
            .optional()
            .min(1));
  s.add(Key::Int("model.res_blocks", "ResnetBlocks per encoder level (the decoder has one more)").optional().min(1));
  s.add(Key::Int("model.latent_channels", "latent channels C (SD's z_channels)").optional().min(1));
  s.add(Key::Bool("model.mid_attention", "attention block between the middle ResnetBlocks").optional());
  s.add(Key::Int("model.norm_groups", "GroupNorm groups (must divide every level's channels)").optional().min(1));
  s.add(Key::Enum("model.reconstruction_loss", {"l1", "l2"}, "pixel loss: mean absolute or mean squared error")
            .def("l1"));
  s.add(Key::Float("model.kl_weight",
                   "beta: weight of the KL term (per image element, as latent diffusion's kl_weight)")
            .def(1e-6)
            .min(0));
  add_image_data_keys(s, ImageDataDefaults{0, 0.5});
  s.add(Key::Int("data.pad_to", "pad images with black to this side (0 = no padding); fashion_mnist: 28 -> 32")
            .def(32)
            .min(0));
  s.add(Key::Int("eval.grid_images",
                 "held-out images shown in the reconstruction grid (reconstructions.png in the run folder, or "
                 "beside the checkpoint for moh eval); 0 = no grid")
            .def(16)
            .range(0, 256));
  return s;
}

// One image's MSE on [0, 1] pixels -> PSNR in dB (capped at 100 dB for a perfect reconstruction).
double psnr_of(double mse01) { return mse01 <= 1e-10 ? 100.0 : 10.0 * std::log10(1.0 / mse01); }

class AutoencoderTask final : public Task {
 public:
  explicit AutoencoderTask(const Config& cfg)
      : seed_(uint64_t(cfg.get_int("run.seed"))),
        data_(make_image_source(cfg, PixelRange::SignedUnit, seed_ ^ kDataKey, warnings_)),
        noise_gen_(seed_ ^ kNoiseKey),
        pad_to_(cfg.get_int("data.pad_to")),
        loss_kind_(cfg.get_string("model.reconstruction_loss") == "l1" ? ReconstructionLoss::L1
                                                                       : ReconstructionLoss::L2),
        kl_weight_(cfg.get_float("model.kl_weight")),
        eval_batch_(cfg.get_int("eval.batch_size")),
        grid_images_(cfg.get_int("eval.grid_images")),
        device_(training_device(cfg)) {
    const int64_t side = padded_side();
    if (pad_to_ != 0 && pad_to_ < data_->image_size())
      throw ConfigError(str_cat(cfg.origin("data.pad_to"), ": data.pad_to ", pad_to_,
                                " is smaller than the images (", data_->image_size(), " pixels)"));
    if ((side - data_->image_size()) % 2 != 0)
      throw ConfigError(str_cat(cfg.origin("data.pad_to"), ": data.pad_to ", pad_to_, " - the image side ",
                                data_->image_size(), " must be even (the padding is centred)"));
    options_ = autoencoder_options_from_config(cfg, data_->channels());
    if (side % options_.downsample_factor() != 0)
      throw ConfigError(str_cat(cfg.origin(pad_to_ ? "data.pad_to" : "model.channel_mult"), ": the image side ", side,
                                " is not a multiple of the autoencoder's downsample factor ",
                                options_.downsample_factor(), " (set data.pad_to)"));
    Generator init(seed_ ^ kInitKey);
    model_ = std::make_shared<Autoencoder>(options_, init);
    model_->to(device_);
  }

  Module& model() override { return *model_; }

  MicroBatchLoss train_micro_batch(int64_t batch_size) override {
    const ImageBatch batch = data_->next_train(batch_size);
    const ag::Variable images(pad_images(batch.images, pad_to_).to(device_));
    const AutoencoderOutput out = model_->forward(images, &noise_gen_);
    return {autoencoder_loss(images, out, loss_kind_, kl_weight_).total, {}, batch_size, 0};
  }

  std::map<std::string, double> evaluate() override {
    ag::NoGradGuard no_grad;
    EvalModeGuard eval_mode(*model_);
    const int64_t n = data_->eval_size();
    const EvalShard shard = eval_shard(n);
    // Sums over the shard: loss, reconstruction loss, KL, squared error on [0, 1] over the original image
    // area, per-image PSNR.
    std::vector<double> sums(5, 0.0);
    data_->for_each_eval_batch(shard.begin, shard.end, eval_batch_, [&](const ImageBatch& batch) {
      const int64_t b = batch.images.size(0);
      const ag::Variable images(pad_images(batch.images, pad_to_).to(device_));
      const AutoencoderOutput out = model_->forward(images, nullptr);
      const AutoencoderLoss loss = autoencoder_loss(images, out, loss_kind_, kl_weight_);
      sums[0] += loss.total.data().item<double>() * double(b);
      sums[1] += loss.reconstruction.data().item<double>() * double(b);
      sums[2] += loss.kl.data().item<double>() * double(b);
      const std::vector<double> mse = image_mse01(batch.images, out.reconstruction.data());
      for (double m : mse) sums[3] += m, sums[4] += psnr_of(m);
    });
    reduce_eval_sums(sums);
    if (grid_images_ > 0 && !output_dir_.empty() && dist::launch_env().rank == 0) write_grid();
    return {{"loss", sums[0] / double(n)}, {"reconstruction", sums[1] / double(n)}, {"kl", sums[2] / double(n)},
            {"mse", sums[3] / double(n)},  {"psnr", sums[4] / double(n)},           {"samples", double(n)}};
  }

  void set_output_dir(const std::string& dir) override { output_dir_ = dir; }
  int64_t samples_per_epoch() const override { return data_->train_size(); }
  std::map<std::string, int64_t> data_state() const override { return data_->state(); }
  void load_data_state(const std::map<std::string, int64_t>& state) override { data_->load_state(state); }
  std::map<std::string, Generator*> generators() override { return {{"noise", &noise_gen_}}; }

 private:
  int64_t padded_side() const { return pad_to_ == 0 ? data_->image_size() : pad_to_; }

  // Per-image mean squared error on [0, 1] pixels between the unpadded images and the same area of the
  // reconstructions (clipped to [-1, 1] first, as saved images are).
  std::vector<double> image_mse01(const Tensor& images, const Tensor& reconstruction) const {
    const int64_t s = images.size(2), offset = (padded_side() - s) / 2;
    const Tensor crop = reconstruction.narrow(2, offset, s).narrow(3, offset, s).to(Device::cpu());
    const Tensor diff = mul(sub(clamp(crop, -1.0, 1.0), images), 0.5);  // [0, 1] units
    return mean(mul(diff, diff), {1, 2, 3}).to_vector<double>();
  }

  // The first grid_images held-out images above their mean reconstructions, eight per row, as PNG.
  void write_grid() {
    const int64_t count = std::min(grid_images_, data_->eval_size()), columns = std::min<int64_t>(8, count);
    std::vector<Tensor> originals, reconstructions;
    data_->for_each_eval_batch(0, count, count, [&](const ImageBatch& batch) {
      const Tensor images = pad_images(batch.images, pad_to_);
      originals.push_back(images);
      reconstructions.push_back(model_->forward(ag::Variable(images.to(device_)), nullptr)
                                    .reconstruction.data()
                                    .to(Device::cpu()));
    });
    const Tensor a = cat(originals, 0), b = cat(reconstructions, 0);
    std::vector<Tensor> rows;
    for (int64_t first = 0; first < count; first += columns) {
      const int64_t k = std::min(columns, count - first);
      // A short last row is filled with black tiles, so its reconstructions start a row of their own.
      const Tensor blank = full({columns - k, a.size(1), a.size(2), a.size(3)}, kBlackPixel, a.dtype());
      rows.push_back(cat({a.narrow(0, first, k), blank}, 0));
      rows.push_back(cat({b.narrow(0, first, k), blank}, 0));
    }
    const Image grid = image_grid(cat(rows, 0), columns, -1.0, 1.0);
    const std::vector<uint8_t> png = encode_png(grid);
    write_file_atomically((std::filesystem::path(output_dir_) / "reconstructions.png").string(),
                          std::string(png.begin(), png.end()));
  }

  uint64_t seed_;
  std::unique_ptr<ImageSource> data_;
  Generator noise_gen_;
  int64_t pad_to_;
  ReconstructionLoss loss_kind_;
  double kl_weight_;
  int64_t eval_batch_, grid_images_;
  Device device_;
  std::string output_dir_;
  AutoencoderOptions options_;
  std::shared_ptr<Autoencoder> model_;
};

}  // namespace

AutoencoderOptions autoencoder_options_from_config(const Config& cfg, int64_t channels) {
  AutoencoderOptions o = autoencoder_preset(cfg.get_string("model.preset"));
  o.in_channels = channels;
  if (cfg.has("model.base_channels")) o.base_channels = cfg.get_int("model.base_channels");
  if (cfg.has("model.channel_mult")) o.channel_mult = cfg.get_int_list("model.channel_mult");
  if (cfg.has("model.res_blocks")) o.res_blocks = cfg.get_int("model.res_blocks");
  if (cfg.has("model.latent_channels")) o.latent_channels = cfg.get_int("model.latent_channels");
  if (cfg.has("model.mid_attention")) o.mid_attention = cfg.get_bool("model.mid_attention");
  if (cfg.has("model.norm_groups")) o.norm_groups = cfg.get_int("model.norm_groups");
  try {
    o.validate();
  } catch (const Error& e) {
    throw ConfigError(str_cat(cfg.origin("model.preset"), ": the model.* keys do not make an autoencoder: ", e.what()));
  }
  return o;
}

Tensor pad_images(const Tensor& images, int64_t side) {
  const int64_t s = images.size(2);
  if (side == 0 || side == s) return images;
  MOH_CHECK(images.dim() == 4 && images.size(3) == s && side > s && (side - s) % 2 == 0, "data.pad_to: cannot pad ",
            describe(images), " to ", side, " x ", side, " (square images, an even difference)");
  Tensor out = full({images.size(0), images.size(1), side, side}, kBlackPixel, images.dtype(), images.device());
  const int64_t offset = (side - s) / 2;
  out.narrow(2, offset, s).narrow(3, offset, s).copy_(images);
  return out;
}

TaskFamily autoencoder_task_family() {
  return {"autoencoder", "KL autoencoder (latent diffusion's VAE) reconstructing images into latents and back",
          autoencoder_schema, [](const Config& cfg) { return std::make_unique<AutoencoderTask>(cfg); }};
}

}  // namespace moh
