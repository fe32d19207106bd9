// ResnetBlock, AttnBlock, Downsample and Upsample of the latent autoencoder (see blocks.h).
#include "models/autoencoder/blocks.h"

#include <cmath>

#include "autograd/autograd.h"
#include "core/factory.h"

namespace moh {

std::shared_ptr<GroupNorm> make_vae_norm(int64_t channels, const AutoencoderBlockOptions& options) {
  GroupNormOptions o;
  o.groups = options.norm_groups;
  o.channels = channels;
  o.eps = 1e-6;
  o.dtype = options.dtype;
  return std::make_shared<GroupNorm>(o);
}

std::shared_ptr<Conv2d> make_vae_conv(int64_t in_channels, int64_t out_channels, int64_t kernel, DType dtype,
                                      Generator& gen) {
  Conv2dOptions o;
  o.in_channels = in_channels;
  o.out_channels = out_channels;
  o.kernel_size = kernel;
  o.padding = kernel / 2;
  o.dtype = dtype;
  return std::make_shared<Conv2d>(o, gen);
}

ResnetBlock::ResnetBlock(int64_t in_channels, int64_t out_channels, const AutoencoderBlockOptions& options,
                         Generator& gen) {
  norm1 = register_module("norm1", make_vae_norm(in_channels, options));
  conv1 = register_module("conv1", make_vae_conv(in_channels, out_channels, 3, options.dtype, gen));
  norm2 = register_module("norm2", make_vae_norm(out_channels, options));
  conv2 = register_module("conv2", make_vae_conv(out_channels, out_channels, 3, options.dtype, gen));
  if (in_channels != out_channels)
    nin_shortcut = register_module("nin_shortcut", make_vae_conv(in_channels, out_channels, 1, options.dtype, gen));
}

ag::Variable ResnetBlock::forward(const ag::Variable& x) const {
  ag::Variable h = conv1->forward(ag::silu(norm1->forward(x)));
  h = conv2->forward(ag::silu(norm2->forward(h)));
  return ag::add(nin_shortcut ? nin_shortcut->forward(x) : x, h);
}

AttnBlock::AttnBlock(int64_t channels, const AutoencoderBlockOptions& options, Generator& gen) {
  norm = register_module("norm", make_vae_norm(channels, options));
  q = register_module("q", make_vae_conv(channels, channels, 1, options.dtype, gen));
  k = register_module("k", make_vae_conv(channels, channels, 1, options.dtype, gen));
  v = register_module("v", make_vae_conv(channels, channels, 1, options.dtype, gen));
  proj_out = register_module("proj_out", make_vae_conv(channels, channels, 1, options.dtype, gen));
}

ag::Variable AttnBlock::forward(const ag::Variable& x) const {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const ag::Variable normed = norm->forward(x);
  // [N, C, H, W] -> [N, 1, H*W, C]: one head over the positions.
  const auto tokens = [&](const Conv2d& proj) {
    return ag::unsqueeze(ag::permute(ag::view(proj.forward(normed), {n, c, h * w}), {0, 2, 1}), 1);
  };
  const ag::Variable attended = ag::attention(tokens(*q), tokens(*k), tokens(*v), 1.0 / std::sqrt(double(c)), false);
  // [N, 1, H*W, C] (memory [N, H*W, 1, C]) -> [N, C, H, W].
  const ag::Variable image = ag::reshape(ag::permute(ag::reshape(attended, {n, h * w, c}), {0, 2, 1}), {n, c, h, w});
  return ag::add(x, proj_out->forward(image));
}

Downsample::Downsample(int64_t channels, DType dtype, Generator& gen) {
  Conv2dOptions o;
  o.in_channels = o.out_channels = channels;
  o.kernel_size = 3;
  o.stride = 2;
  o.dtype = dtype;
  conv = register_module("conv", std::make_shared<Conv2d>(o, gen));
}

ag::Variable Downsample::forward(const ag::Variable& x) const {
  // torch.nn.functional.pad(x, (0, 1, 0, 1)): one zero column at the right, one zero row at the bottom.
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const Device device = x.data().device();
  const ag::Variable right(zeros({n, c, h, 1}, x.dtype(), device));
  const ag::Variable bottom(zeros({n, c, 1, w + 1}, x.dtype(), device));
  return conv->forward(ag::cat({ag::cat({x, right}, 3), bottom}, 2));
}

Upsample::Upsample(int64_t channels, DType dtype, Generator& gen) {
  conv = register_module("conv", make_vae_conv(channels, channels, 3, dtype, gen));
}

ag::Variable Upsample::forward(const ag::Variable& x) const { return conv->forward(ag::upsample_nearest2d(x, 2)); }

}  // namespace moh
