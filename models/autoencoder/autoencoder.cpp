// Autoencoder construction, encode/decode, the posterior and the loss; the options' checks and
// presets (see autoencoder.h, autoencoder_options.h).
#include "models/autoencoder/autoencoder.h"

#include "autograd/autograd.h"
#include "core/random.h"
#include "core/error.h"

namespace moh {

void AutoencoderOptions::validate() const {
  MOH_CHECK(in_channels > 0 && base_channels > 0 && latent_channels > 0 && res_blocks > 0 && norm_groups > 0,
            "Autoencoder: in_channels, base_channels, latent_channels, res_blocks and norm_groups must be positive, "
            "got ", in_channels, ", ", base_channels, ", ", latent_channels, ", ", res_blocks, ", ", norm_groups);
  MOH_CHECK(!channel_mult.empty() && channel_mult.size() <= 8, "Autoencoder: channel_mult needs 1 to 8 levels, got ",
            channel_mult.size());
  for (size_t i = 0; i < channel_mult.size(); ++i) {
    MOH_CHECK(channel_mult[i] > 0, "Autoencoder: channel_mult[", i, "] must be positive, got ", channel_mult[i]);
    MOH_CHECK(base_channels * channel_mult[i] % norm_groups == 0, "Autoencoder: norm_groups ", norm_groups,
              " does not divide the ", base_channels * channel_mult[i], " channels of level ", i,
              " (base_channels ", base_channels, " x channel_mult[", i, "] ", channel_mult[i], ")");
  }
}

AutoencoderOptions autoencoder_preset(const std::string& name) {
  AutoencoderOptions o;
  if (name == "fmnist") {
    o.in_channels = 1, o.base_channels = 16, o.channel_mult = {1, 2, 4}, o.res_blocks = 1, o.norm_groups = 8;
    return o;
  }
  if (name == "sd") return o;
  MOH_FAIL("autoencoder_preset: unknown model '", name, "'; expected fmnist or sd");
}

ag::Variable LatentPosterior::sample(Generator& gen) const {
  const Tensor noise = normal(mean.shape(), 0.0, 1.0, gen, mean.dtype(), mean.data().device());
  return ag::add(mean, ag::mul(ag::exp(ag::mul(logvar, 0.5)), ag::Variable(noise)));
}

ag::Variable LatentPosterior::kl() const {
  // 0.5 * sum(mean^2 + exp(logvar) - 1 - logvar) over [C, h, w].
  const ag::Variable terms = ag::sub(ag::sub(ag::add(ag::mul(mean, mean), ag::exp(logvar)), 1.0), logvar);
  return ag::mul(ag::sum(terms, {1, 2, 3}), 0.5);
}

Autoencoder::Autoencoder(const AutoencoderOptions& options, Generator& gen) : options_(options) {
  options.validate();
  encoder = register_module("encoder", std::make_shared<Encoder>(options, gen));
  decoder = register_module("decoder", std::make_shared<Decoder>(options, gen));
  const int64_t c = options.latent_channels;
  quant_conv = register_module("quant_conv", make_vae_conv(2 * c, 2 * c, 1, options.dtype, gen));
  post_quant_conv = register_module("post_quant_conv", make_vae_conv(c, c, 1, options.dtype, gen));
}

std::string Autoencoder::extra_repr() const {
  std::string mult;
  for (int64_t m : options_.channel_mult) mult += (mult.empty() ? "" : ", ") + std::to_string(m);
  return str_cat("in=", options_.in_channels, ", ch=", options_.base_channels, ", ch_mult=[", mult,
                 "], res_blocks=", options_.res_blocks, ", z=", options_.latent_channels,
                 ", f=", options_.downsample_factor(), options_.mid_attention ? ", mid attention" : "");
}

LatentPosterior Autoencoder::encode(const ag::Variable& images) const {
  const AutoencoderOptions& o = options_;
  MOH_CHECK(images.defined() && images.dim() == 4 && images.size(1) == o.in_channels &&
                images.size(2) % o.downsample_factor() == 0 && images.size(3) % o.downsample_factor() == 0 &&
                images.size(2) > 0 && images.size(3) > 0,
            "Autoencoder: expected images [N, ", o.in_channels, ", H, W] with H and W multiples of ",
            o.downsample_factor(), ", got ", images.describe());
  const ag::Variable moments = quant_conv->forward(encoder->forward(images));
  const int64_t c = o.latent_channels;
  return {ag::narrow(moments, 1, 0, c), ag::clamp(ag::narrow(moments, 1, c, c), -30.0, 20.0)};
}

ag::Variable Autoencoder::decode(const ag::Variable& latents) const {
  MOH_CHECK(latents.defined() && latents.dim() == 4 && latents.size(1) == options_.latent_channels,
            "Autoencoder: expected latents [N, ", options_.latent_channels, ", h, w], got ", latents.describe());
  return decoder->forward(post_quant_conv->forward(latents));
}

AutoencoderOutput Autoencoder::forward(const ag::Variable& images, Generator* noise) const {
  LatentPosterior posterior = encode(images);
  ag::Variable z = noise ? posterior.sample(*noise) : posterior.mean;
  return {posterior, decode(z)};
}

AutoencoderLoss autoencoder_loss(const ag::Variable& images, const AutoencoderOutput& out, ReconstructionLoss kind,
                                 double beta) {
  MOH_CHECK(images.shape() == out.reconstruction.shape(), "autoencoder_loss: images ", images.describe(),
            " and reconstruction ", out.reconstruction.describe(), " differ in shape");
  const ag::Variable diff = ag::sub(out.reconstruction, images);
  const ag::Variable rec = ag::mean(kind == ReconstructionLoss::L1 ? ag::abs(diff) : ag::mul(diff, diff));
  const ag::Variable kl = ag::mean(out.posterior.kl());
  const double image_elements = double(images.size(1) * images.size(2) * images.size(3));
  return {ag::add(rec, ag::mul(kl, beta / image_elements)), rec, kl};
}

}  // namespace moh
