// Autoencoder: the KL-regularised convolutional autoencoder of latent diffusion (the Stable-Diffusion
// VAE's `AutoencoderKL`: encoder, decoder, quant_conv, post_quant_conv, with its parameter names, so
// its state dicts load by name), and its training loss.
//  encode   images -> encoder -> quant_conv (1x1) -> the diagonal Gaussian posterior: mean and
//           log-variance, C latent channels each, the log-variance clamped to [-30, 20] as SD does
//  decode   latents -> post_quant_conv (1x1) -> decoder -> images
// Images are [N, in_channels, S, S] in [-1, 1] with S a multiple of the downsample factor f; latents
// are [N, C, S/f, S/f].
#pragma once

#include <memory>
#include <string>

#include "autograd/variable.h"
#include "core/random.h"
#include "layers/conv2d.h"
#include "layers/module.h"
#include "models/autoencoder/autoencoder_options.h"
#include "models/autoencoder/encoder_decoder.h"

namespace moh {

struct LatentPosterior {
  ag::Variable mean, logvar;  // [N, C, h, w] each
  // mean + exp(logvar / 2) * noise, noise ~ N(0, 1) drawn from gen (differentiable in mean and logvar).
  ag::Variable sample(Generator& gen) const;
  // KL(posterior || N(0, I)) per sample, summed over the latent elements: [N].
  ag::Variable kl() const;
};

struct AutoencoderOutput {
  LatentPosterior posterior;
  ag::Variable reconstruction;  // decode of a posterior sample (training) or of its mean
};

class Autoencoder : public Module {
 public:
  Autoencoder(const AutoencoderOptions& options, Generator& gen);
  std::string type_name() const override { return "AutoencoderKL"; }
  std::string extra_repr() const override;

  LatentPosterior encode(const ag::Variable& images) const;
  ag::Variable decode(const ag::Variable& latents) const;
  // Encodes, then decodes a sample of the posterior drawn from `noise`, or its mean when noise is null.
  AutoencoderOutput forward(const ag::Variable& images, Generator* noise) const;

  const AutoencoderOptions& options() const { return options_; }

  std::shared_ptr<Encoder> encoder;
  std::shared_ptr<Decoder> decoder;
  std::shared_ptr<Conv2d> quant_conv, post_quant_conv;

 private:
  AutoencoderOptions options_;
};

enum class ReconstructionLoss { L1, L2 };

struct AutoencoderLoss {
  ag::Variable total;           // reconstruction + beta * kl / (C * S * S of an image)
  ag::Variable reconstruction;  // mean |x - x'| (L1) or mean (x - x')^2 (L2) over every image element
  ag::Variable kl;              // mean over the batch of LatentPosterior::kl(), in nats per image
};

// The loss of latent diffusion's LPIPSWithDiscriminator without the perceptual and adversarial terms
// and with its log-variance fixed at 0, divided by the elements of an image: with the same beta
// (its `kl_weight`, 1e-6 for SD) the balance of the two terms is the same, and the learning rate does
// not depend on the image size.
AutoencoderLoss autoencoder_loss(const ag::Variable& images, const AutoencoderOutput& out, ReconstructionLoss kind,
                                 double beta);

}  // namespace moh
