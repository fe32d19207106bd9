// Vision Transformer (timm's VisionTransformer layout and parameter names, so timm/DeiT checkpoints
// load by name): patch_embed -> [cls_token] + pos_embed -> blocks.<i> (pre-norm: x + drop_path(attn(
// norm1(x))), x + drop_path(mlp(norm2(x)))) -> norm + class token, or mean over tokens + fc_norm
// (timm's global_pool="avg") -> head. Each block's attention is a MultiHeadAttention or, from the
// shared per-block attention spec, an MoHAttention whose balance losses forward() returns.
// Init follows timm's default ViT init: trunc_normal(0.02) for Linear weights (attention, MoH gates,
// Mlp, head), cls_token and a learned pos_embed, zero biases; the patch projection is xavier_uniform
// on its [D, C*p*p] view (as MAE/DiT). LayerNorms use eps 1e-6 (timm).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "core/random.h"
#include "layers/dropout.h"
#include "layers/mlp.h"
#include "layers/attention_spec.h"
#include "layers/module.h"
#include "layers/norm.h"
#include "layers/patch_embed.h"

namespace moh {

struct VitOptions {
  enum class PosEmbed { Learned, SinCos };  // SinCos: a fixed MAE 2-D table, stored as a buffer

  int64_t img_size = 224;
  int64_t patch_size = 16;
  int64_t in_chans = 3;
  int64_t num_classes = 1000;  // 0: no head, forward returns the pooled features [B, dim]
  int64_t dim = 768;
  int64_t depth = 12;
  int64_t heads = 12;
  double mlp_ratio = 4.0;
  bool class_token = true;  // false: global average pooling over the patch tokens
  PosEmbed pos_embed = PosEmbed::Learned;
  double drop_path = 0.0;  // block i uses drop_path * i / (depth - 1) (timm's linspace)
  AttentionSpec attention;  // MHA or MoH per block (layers/attention_spec.h); default: MHA everywhere
  bool qkv_bias = true;
  DType dtype = DType::Float32;
};

// Named sizes (the caller may change any field afterwards):
//  tiny       28x28x1 (Fashion-MNIST), patch 7 (4x4 = 16 tokens), dim 128, depth 6, heads 8, mlp_ratio 2,
//             average pooling, learned pos_embed, no drop path: the shape configs/vit/fmnist_*.yaml train
//             (804,874 parameters)
//  deit_tiny  224/16, dim 192, depth 12, heads 3, 1000 classes   (5,717,416 parameters)
//  deit_small 224/16, dim 384, depth 12, heads 6, 1000 classes   (22,050,664)
//  deit_base  224/16, dim 768, depth 12, heads 12, 1000 classes  (86,567,656)
// All MHA; an unknown name throws listing the known ones.
VitOptions vit_preset(const std::string& name);

class Block : public Module {
 public:
  // Block `index` of options.depth; drop_path: this block's rate (dropout_gen is needed only when it is > 0).
  Block(const VitOptions& options, int64_t index, double drop_path, Generator& gen,
        std::shared_ptr<Generator> dropout_gen);
  std::string type_name() const override { return "Block"; }
  // x [B, T, dim] -> [B, T, dim]; a defined balance loss of the attention is appended to `balance_losses`.
  ag::Variable forward(const ag::Variable& x, std::vector<ag::Variable>& balance_losses) const;

  std::shared_ptr<LayerNorm> norm1, norm2;
  std::shared_ptr<MultiHeadAttention> attn;  // an MoHAttention for MoH blocks
  std::shared_ptr<Mlp> mlp;
  std::shared_ptr<DropPath> drop_path;
};

struct VitOutput {
  ag::Variable logits;                       // [B, num_classes] ([B, dim] without a head)
  ag::Variable features;                     // [B, dim]: the pooled, normalised tokens the head reads (FID)
  std::vector<ag::Variable> balance_losses;  // one per MoH block with routed_topk > 0, training only
};

class VisionTransformer : public Module {
 public:
  // gen draws the initial weights; dropout_gen drives DropPath (needed only when drop_path > 0).
  VisionTransformer(const VitOptions& options, Generator& gen, std::shared_ptr<Generator> dropout_gen = nullptr);
  std::string type_name() const override { return "VisionTransformer"; }
  std::string extra_repr() const override;
  void to(Device device) override;  // also re-wraps the sin-cos `pos_embed` buffer
  // The learned `pos_embed` and `cls_token` (when present), as timm's VisionTransformer.
  std::vector<std::string> no_weight_decay() const override;
  // images [B, in_chans, img_size, img_size] of the model's dtype.
  VitOutput forward(const ag::Variable& images) const;

  const VitOptions& options() const { return options_; }
  int64_t num_tokens() const;  // patches + class token

  std::shared_ptr<PatchEmbed> patch_embed;
  std::vector<std::shared_ptr<Block>> blocks;
  std::shared_ptr<LayerNorm> norm;     // class-token pooling (timm `norm`)
  std::shared_ptr<LayerNorm> fc_norm;  // average pooling (timm `fc_norm`)
  std::shared_ptr<Linear> head;        // null when num_classes == 0

 private:
  VitOptions options_;
  ag::Variable cls_token_;  // [1, 1, dim], undefined without a class token
  ag::Variable pos_embed_;  // [1, N (+1), dim]; SinCos: a constant over the `pos_embed` buffer
};

}  // namespace moh
