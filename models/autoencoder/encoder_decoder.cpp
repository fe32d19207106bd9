// Encoder, Decoder and MidBlock construction in the Stable-Diffusion VAE's registration order (so
// state dicts list as its do) and their forward passes (see encoder_decoder.h).
#include "models/autoencoder/encoder_decoder.h"

#include "autograd/autograd.h"
#include "layers/module_list.h"

namespace moh {
namespace {

// `down.<i>` / `up.<i>`: a plain nn.Module holding `block` (a ModuleList) and the resampling layer.
class LevelModule : public Module {
 public:
  std::string type_name() const override { return "Module"; }
  template <class M>
  std::shared_ptr<M> add(const std::string& name, std::shared_ptr<M> module) {
    return register_module(name, std::move(module));
  }
};

AutoencoderBlockOptions block_options(const AutoencoderOptions& o) { return {o.norm_groups, o.dtype}; }

ag::Variable run_blocks(const CoderLevel& level, ag::Variable x) {
  for (const auto& block : level.blocks) x = block->forward(x);
  return x;
}

}  // namespace

MidBlock::MidBlock(int64_t channels, bool attention, const AutoencoderBlockOptions& options, Generator& gen) {
  block_1 = register_module("block_1", std::make_shared<ResnetBlock>(channels, channels, options, gen));
  if (attention) attn_1 = register_module("attn_1", std::make_shared<AttnBlock>(channels, options, gen));
  block_2 = register_module("block_2", std::make_shared<ResnetBlock>(channels, channels, options, gen));
}

ag::Variable MidBlock::forward(const ag::Variable& x) const {
  ag::Variable h = block_1->forward(x);
  if (attn_1) h = attn_1->forward(h);
  return block_2->forward(h);
}

Encoder::Encoder(const AutoencoderOptions& o, Generator& gen) {
  o.validate();
  const AutoencoderBlockOptions bo = block_options(o);
  conv_in_ = register_module("conv_in", make_vae_conv(o.in_channels, o.base_channels, 3, o.dtype, gen));
  auto down = register_module("down", std::make_shared<ModuleList>());
  int64_t channels = o.base_channels;
  for (int64_t i = 0; i < o.levels(); ++i) {
    auto level_module = down->add(std::make_shared<LevelModule>());
    auto block_list = level_module->add("block", std::make_shared<ModuleList>());
    CoderLevel level;
    const int64_t out = o.base_channels * o.channel_mult[size_t(i)];
    for (int64_t j = 0; j < o.res_blocks; ++j, channels = out)
      level.blocks.push_back(block_list->add(std::make_shared<ResnetBlock>(channels, out, bo, gen)));
    if (i + 1 < o.levels())
      level.downsample = level_module->add("downsample", std::make_shared<Downsample>(channels, o.dtype, gen));
    levels_.push_back(std::move(level));
  }
  mid_ = register_module("mid", std::make_shared<MidBlock>(channels, o.mid_attention, bo, gen));
  norm_out_ = register_module("norm_out", make_vae_norm(channels, bo));
  conv_out_ = register_module("conv_out", make_vae_conv(channels, 2 * o.latent_channels, 3, o.dtype, gen));
}

ag::Variable Encoder::forward(const ag::Variable& images) const {
  ag::Variable h = conv_in_->forward(images);
  for (const CoderLevel& level : levels_) {
    h = run_blocks(level, h);
    if (level.downsample) h = level.downsample->forward(h);
  }
  h = mid_->forward(h);
  return conv_out_->forward(ag::silu(norm_out_->forward(h)));
}

Decoder::Decoder(const AutoencoderOptions& o, Generator& gen) {
  o.validate();
  const AutoencoderBlockOptions bo = block_options(o);
  int64_t channels = o.base_channels * o.channel_mult.back();
  conv_in_ = register_module("conv_in", make_vae_conv(o.latent_channels, channels, 3, o.dtype, gen));
  mid_ = register_module("mid", std::make_shared<MidBlock>(channels, o.mid_attention, bo, gen));
  // The SD VAE builds the levels from the last to the first (so the random draws go in that order)
  // and registers them by index.
  levels_.resize(size_t(o.levels()));
  std::vector<std::shared_ptr<LevelModule>> level_modules(size_t(o.levels()));
  for (int64_t i = o.levels() - 1; i >= 0; --i) {
    auto level_module = std::make_shared<LevelModule>();
    auto block_list = level_module->add("block", std::make_shared<ModuleList>());
    CoderLevel& level = levels_[size_t(i)];
    const int64_t out = o.base_channels * o.channel_mult[size_t(i)];
    for (int64_t j = 0; j <= o.res_blocks; ++j, channels = out)
      level.blocks.push_back(block_list->add(std::make_shared<ResnetBlock>(channels, out, bo, gen)));
    if (i > 0) level.upsample = level_module->add("upsample", std::make_shared<Upsample>(channels, o.dtype, gen));
    level_modules[size_t(i)] = level_module;
  }
  auto up = register_module("up", std::make_shared<ModuleList>());
  for (auto& level_module : level_modules) up->add(level_module);
  norm_out_ = register_module("norm_out", make_vae_norm(channels, bo));
  conv_out_ = register_module("conv_out", make_vae_conv(channels, o.in_channels, 3, o.dtype, gen));
}

ag::Variable Decoder::forward(const ag::Variable& latents) const {
  ag::Variable h = mid_->forward(conv_in_->forward(latents));
  for (auto level = levels_.rbegin(); level != levels_.rend(); ++level) {
    h = run_blocks(*level, h);
    if (level->upsample) h = level->upsample->forward(h);
  }
  return conv_out_->forward(ag::silu(norm_out_->forward(h)));
}

}  // namespace moh
