// DiT, the Diffusion Transformer of facebookresearch/DiT (models.py), with its parameter names so DiT
// checkpoints load by name: x_embedder (PatchEmbed) + the fixed 2-D sin-cos `pos_embed` (a buffer) ->
// blocks.<i> (adaLN-Zero DiTBlocks conditioned on c = t_embedder(t) + y_embedder(y)) -> final_layer ->
// unpatchify, [N, C, H, W] -> [N, out_channels, H, W] with out_channels = 2 C under learned sigma (the
// first C channels are the noise prediction, the last C the variance interpolation). Each block's attention
// is MHA or MoH from the shared AttentionSpec, which may also give each block its own head count (the paper's
// MoH-DiT-L/XL layouts: 8, 16 and 24 heads of a fixed head_dim). Initialisation is DiT's
// initialize_weights: xavier_uniform Linear weights (MoH gates included, as MoH-DiT's; the patch
// projection on its [D, C*p*p] view), zero biases, normal(0.02) label table and timestep MLP, and zero
// adaLN modulation and final linear, so at initialisation every block is the identity and the output is
// exactly zero.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "core/random.h"
#include "layers/attention_spec.h"
#include "layers/patch_embed.h"
#include "models/dit/dit_blocks.h"

namespace moh {

struct DitOptions {
  int64_t input_size = 32;  // square latents input_size x input_size
  int64_t patch_size = 2;
  int64_t in_channels = 4;
  int64_t dim = 1152;  // DiT's hidden_size
  int64_t depth = 28;
  int64_t heads = 16;     // every block's, unless attention.heads gives each block its own
  int64_t head_dim = 0;   // 0: dim / the block's head count (DiT's); MoH-DiT-L/XL fix it (64, 72)
  double mlp_ratio = 4.0;
  int64_t num_classes = 1000;
  double class_dropout_prob = 0.1;  // > 0 adds the null class (row num_classes) for guidance
  bool learn_sigma = true;          // out_channels = 2 in_channels
  int64_t frequency_dim = 256;      // the timestep embedder's sinusoid size
  AttentionSpec attention;          // MHA or MoH per block; default MHA everywhere
  DType dtype = DType::Float32;

  int64_t out_channels() const { return learn_sigma ? 2 * in_channels : in_channels; }
  int64_t grid_size() const { return input_size / patch_size; }
  int64_t num_tokens() const { return grid_size() * grid_size(); }
  // Throws naming the field unless the options describe a model that can be built.
  void validate() const;
};

// Named models (the caller may change any field afterwards). DiT's (32x32x4 latents, 1000 classes, patch 2):
//   DiT-S/2 depth 12, dim 384, 6 heads; DiT-B/2 12/768/12; DiT-L/2 24/1024/16; DiT-XL/2 28/1152/16.
// The paper's MoH layouts (SkyworkAI/MoH, MoH-DiT/models.py), per block shared_heads / routed_topk:
//   MoH-DiT-S/2-90 [3 x8, 6 x4] / [2 x8, 0 x4]     MoH-DiT-S/2-75 [2 2, 3 x8, 6 6] / [1 x6, 2 x4, 0 0]
//   MoH-DiT-B/2-90 [6 x5, 7 x5, 12 12] / [4 x10, 0 0]  MoH-DiT-B/2-75 [4 4, 6 x8, 12 12] / [2 2, 3 x8, 0 0]
//   MoH-DiT-L/2-90, -75 (head_dim 64) and MoH-DiT-XL/2-90, -75 (head_dim 72): 8, 16 and 24 heads in the first,
//   middle and last third (L 8 blocks each; XL 9, 10, 9), shared / routed_topk per third: L-90 [8, 16, 16] /
//   [0, 0, 3], L-75 [8, 8, 12] / [0, 4, 4], XL-90 [8, 16, 16] / [0, 0, 3], XL-75 [8, 10, 14] / [0, 2, 2];
//   that is 90% and 75% of all heads (the share attention.active_share reports).
//   (routed_topk 0: an all-shared layer with head gates, as the reference's).
// fmnist: 4 x 8 x 8 latents of the Fashion-MNIST autoencoder, patch 2 (16 tokens), dim 128, depth 6,
//   4 heads, 10 classes. An unknown name throws listing the known ones.
DitOptions dit_preset(const std::string& name);

struct DitOutput {
  ag::Variable out;                          // [N, out_channels, H, W]
  std::vector<ag::Variable> balance_losses;  // one per MoH block with routed_topk > 0, training only
};

class DiT : public Module {
 public:
  // gen draws the initial weights; label_dropout_gen draws the class dropout in training (needed only
  // when class_dropout_prob > 0 and the model trains without forced drops).
  DiT(const DitOptions& options, Generator& gen, std::shared_ptr<Generator> label_dropout_gen = nullptr);
  std::string type_name() const override { return "DiT"; }
  std::string extra_repr() const override;
  void to(Device device) override;  // also re-wraps the `pos_embed` buffer

  // x [N, in_channels, input_size, input_size] of the model's dtype, t [N] timesteps (any real dtype, may
  // be fractional), y int64 [N] class labels (num_classes = the null class when the model has one);
  // force_drop_ids int64 [N]: 1 replaces that label by the null class (DiT's classifier-free guidance path).
  DitOutput forward(const ag::Variable& x, const Tensor& t, const Tensor& y, const Tensor& force_drop_ids = {}) const;
  // DiT's forward_with_cfg: the first half of x is run twice (with the first and second half of y, usually
  // the labels and the null class); on the first cfg_channels output channels (0: all in_channels latent
  // channels; 3 reproduces the reference code) both halves become uncond + cfg_scale * (cond - uncond), the
  // other channels are the model's own output. N must be even.
  ag::Variable forward_with_cfg(const ag::Variable& x, const Tensor& t, const Tensor& y, double cfg_scale,
                                int64_t cfg_channels = 0) const;
  // [N, T, p * p * out_channels] patches -> [N, out_channels, H, W] (DiT's unpatchify).
  ag::Variable unpatchify(const ag::Variable& patches) const;

  // Forward FLOPs of one sample (2 per multiply-add, matrix products only; DiT's "Gflops" count one per
  // multiply-add, i.e. half of these). dense: every head on every token; active: the query rows, scores,
  // values and output-projection slices MoH skips are not counted (keys and values are, for every head).
  struct Flops {
    double dense = 0, active = 0;
  };
  Flops forward_flops_per_sample() const;

  const DitOptions& options() const { return options_; }

  std::shared_ptr<PatchEmbed> x_embedder;
  std::shared_ptr<TimestepEmbedder> t_embedder;
  std::shared_ptr<LabelEmbedder> y_embedder;
  std::vector<std::shared_ptr<DiTBlock>> blocks;
  std::shared_ptr<FinalLayer> final_layer;

 private:
  DitOptions options_;
  std::shared_ptr<Generator> label_dropout_gen_;
  ag::Variable pos_embed_;  // [1, T, dim], a constant over the `pos_embed` buffer
};

}  // namespace moh
