// Decoded DiT samples (see dit_images.h).
#include "trainers/dit_images.h"

#include <algorithm>

#include "autograd/tape.h"
#include "core/ops.h"
#include "trainers/stored_autoencoder.h"

namespace moh {

Tensor sample_dit_images(const DiT& model, const DiffusionOptions& base, const Autoencoder& decoder,
                         double scale_factor, const Tensor& labels, const DitImageOptions& options, Generator& gen,
                         const DitImageProgress& progress) {
  MOH_CHECK(options.steps >= 1 && options.steps <= base.steps, "sampling steps ", options.steps, " must be in [1, ",
            base.steps, "] (the process the model was trained on)");
  MOH_CHECK(options.batch >= 1, "the sampling batch must be at least 1, got ", options.batch);
  MOH_CHECK(decoder.options().latent_channels == model.options().in_channels, "the autoencoder decodes ",
            decoder.options().latent_channels, "-channel latents; the DiT samples ", model.options().in_channels);
  MOH_CHECK(labels.defined() && labels.dim() == 1 && labels.size(0) >= 1, "sample_dit_images: expected labels [N]");
  DiffusionOptions respaced = base;
  respaced.respacing = std::to_string(options.steps);
  const GaussianDiffusion diffusion = GaussianDiffusion::create(respaced);
  ag::NoGradGuard no_grad;
  const Device decoder_device = decoder.parameters().front().data().device();
  const int64_t n = labels.size(0);
  std::vector<Tensor> images;
  for (int64_t done = 0; done < n; done += options.batch) {
    const int64_t b = std::min(options.batch, n - done);
    const Tensor z = sample_dit(model, diffusion, labels.narrow(0, done, b).contiguous(), options.guidance,
                                options.loop, gen, [&](int64_t step, int64_t steps) {
                                  if (progress) progress(done, step, steps);
                                });
    const Tensor decoded =
        decoder.decode(ag::Variable(div(z, scale_factor).to(decoder_device))).data().to(Device::cpu());
    images.push_back(centre_crop(decoded, options.crop, "the sample crop").contiguous());
  }
  return cat(images, 0);
}

}  // namespace moh
