// Decoded DiT samples (see dit_images.h).
#include "trainers/dit_images.h"

#include <algorithm>

#include "autograd/tape.h"
#include "core/dist/world.h"
#include "core/ops.h"
#include "trainers/eval_shard.h"
#include "trainers/stored_autoencoder.h"

namespace moh {

Tensor sample_dit_images(const DiT& model, const DiffusionOptions& base, const Autoencoder& decoder,
                         double scale_factor, const Tensor& labels, const DitImageOptions& options, uint64_t seed,
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
  const int64_t n = labels.size(0), batches = (n + options.batch - 1) / options.batch;
  const int ranks = dist::world().size();
  std::vector<EvalShard> rows;  // each rank's samples: whole batches of its eval_shard of the batches
  for (int r = 0; r < ranks; ++r) {
    const EvalShard mine = eval_shard(batches, r, ranks);
    rows.push_back({std::min(mine.begin * options.batch, n), std::min(mine.end * options.batch, n)});
  }
  const EvalShard own = rows[size_t(dist::world().rank())];
  std::vector<Tensor> images;
  for (int64_t start = own.begin; start < own.end; start += options.batch) {
    const int64_t b = std::min(options.batch, n - start);
    Generator gen(seed, uint64_t(start / options.batch) << 40);  // 2^40 Philox blocks per batch
    const Tensor z = sample_dit(model, diffusion, labels.narrow(0, start, b).contiguous(), options.guidance,
                                options.loop, gen, [&](int64_t step, int64_t steps) {
                                  if (progress) progress(start - own.begin, step, steps);
                                });
    const Tensor decoded =
        decoder.decode(ag::Variable(div(z, scale_factor).to(decoder_device))).data().to(Device::cpu());
    images.push_back(centre_crop(decoded, options.crop, "the sample crop").contiguous());
  }
  if (images.empty()) {  // more ranks than batches: this rank contributes no rows, of the images' shape
    const AutoencoderOptions& ae = decoder.options();
    const int64_t side = model.options().input_size * ae.downsample_factor();
    const int64_t cropped = options.crop > 0 ? options.crop : side;
    images.push_back(Tensor::empty({0, ae.in_channels, cropped, cropped}, decoder.parameters().front().data().dtype()));
  }
  return gather_shard_rows(cat(images, 0), rows);
}

}  // namespace moh
