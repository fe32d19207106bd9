// VisionTransformer and Block: construction in timm's registration order (so state dicts list like
// timm's), presets and the forward pass (see vit.h).
#include "models/vit/vit.h"

#include "autograd/autograd.h"
#include "core/factory.h"
#include "layers/init.h"
#include "layers/module_list.h"
#include "layers/position.h"

namespace moh {
namespace {

constexpr double kLayerNormEps = 1e-6;  // timm's partial(nn.LayerNorm, eps=1e-6)
constexpr double kInitStd = 0.02;

AttentionOptions attention_options(const VitOptions& o) {
  AttentionOptions a;
  a.dim = o.dim;
  a.num_heads = o.heads;
  a.qkv_bias = o.qkv_bias;
  a.init = WeightInit::TruncNormal;
  a.init_std = kInitStd;
  a.dtype = o.dtype;
  return a;
}

void check_options(const VitOptions& o) {
  MOH_CHECK(o.img_size > 0 && o.patch_size > 0 && o.in_chans > 0 && o.dim > 0 && o.depth > 0 && o.heads > 0,
            "VisionTransformer: img_size, patch_size, in_chans, dim, depth and heads must be positive, got ",
            o.img_size, ", ", o.patch_size, ", ", o.in_chans, ", ", o.dim, ", ", o.depth, ", ", o.heads);
  MOH_CHECK(o.img_size % o.patch_size == 0, "VisionTransformer: img_size ", o.img_size,
            " is not a multiple of patch_size ", o.patch_size);
  MOH_CHECK(o.dim % o.heads == 0, "VisionTransformer: dim ", o.dim, " is not a multiple of heads ", o.heads);
  MOH_CHECK(o.num_classes >= 0, "VisionTransformer: num_classes must be >= 0, got ", o.num_classes);
  MOH_CHECK(o.mlp_ratio > 0, "VisionTransformer: mlp_ratio must be positive, got ", o.mlp_ratio);
  MOH_CHECK(o.drop_path >= 0 && o.drop_path < 1, "VisionTransformer: drop_path must be in [0, 1), got ",
            o.drop_path);
  MOH_CHECK(o.pos_embed == VitOptions::PosEmbed::Learned || o.dim % 4 == 0,
            "VisionTransformer: the sin-cos position embedding needs dim divisible by 4, got ", o.dim);
  o.attention.validate(o.depth, o.heads);  // before any allocation
}

}  // namespace

VitOptions vit_preset(const std::string& name) {
  VitOptions o;
  if (name == "tiny") {
    o.img_size = 28, o.patch_size = 7, o.in_chans = 1, o.num_classes = 10;
    o.dim = 128, o.depth = 6, o.heads = 8, o.mlp_ratio = 2, o.class_token = false;
    return o;
  }
  o.img_size = 224, o.patch_size = 16, o.in_chans = 3, o.num_classes = 1000, o.depth = 12;
  if (name == "deit_tiny") o.dim = 192, o.heads = 3;
  else if (name == "deit_small") o.dim = 384, o.heads = 6;
  else if (name == "deit_base") o.dim = 768, o.heads = 12;
  else MOH_FAIL("vit_preset: unknown model '", name, "'; expected tiny, deit_tiny, deit_small or deit_base");
  return o;
}

Block::Block(const VitOptions& o, int64_t index, double drop_path_rate, Generator& gen,
             std::shared_ptr<Generator> dropout_gen) {
  const LayerNormOptions ln{o.dim, kLayerNormEps, true, o.dtype};
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(ln));
  attn = register_module("attn", make_block_attention(o.attention, index, o.depth, attention_options(o), gen));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(ln));
  MlpOptions mlp_options;
  mlp_options.in_features = o.dim;
  mlp_options.hidden_features = int64_t(double(o.dim) * o.mlp_ratio);
  mlp_options.init = WeightInit::TruncNormal;
  mlp_options.init_std = kInitStd;
  mlp_options.dtype = o.dtype;
  mlp = register_module("mlp", std::make_shared<Mlp>(mlp_options, gen));
  drop_path = register_module("drop_path", std::make_shared<DropPath>(drop_path_rate, std::move(dropout_gen)));
}

ag::Variable Block::forward(const ag::Variable& x, std::vector<ag::Variable>& balance_losses) const {
  AttentionOutput a = attn->forward(norm1->forward(x));
  if (a.balance_loss.defined()) balance_losses.push_back(a.balance_loss);
  ag::Variable h = ag::add(x, drop_path->forward(a.out));
  return ag::add(h, drop_path->forward(mlp->forward(norm2->forward(h))));
}

VisionTransformer::VisionTransformer(const VitOptions& options, Generator& gen,
                                     std::shared_ptr<Generator> dropout_gen)
    : options_(options) {
  check_options(options_);
  const VitOptions& o = options_;
  PatchEmbedOptions pe;
  pe.img_size = o.img_size;
  pe.patch_size = o.patch_size;
  pe.in_chans = o.in_chans;
  pe.embed_dim = o.dim;
  pe.dtype = o.dtype;
  patch_embed = register_module("patch_embed", std::make_shared<PatchEmbed>(pe, gen));

  if (o.class_token) {
    cls_token_ = register_parameter("cls_token", zeros({1, 1, o.dim}, o.dtype));
    init::trunc_normal(cls_token_, gen, kInitStd);
  }
  const int64_t grid = o.img_size / o.patch_size, extra = o.class_token ? 1 : 0;
  if (o.pos_embed == VitOptions::PosEmbed::Learned) {
    pos_embed_ = register_parameter("pos_embed", zeros({1, grid * grid + extra, o.dim}, o.dtype));
    init::trunc_normal(pos_embed_, gen, kInitStd);
  } else {
    Tensor table = sincos_table_2d(o.dim, grid, grid, extra, o.dtype).reshape({1, grid * grid + extra, o.dim});
    pos_embed_ = ag::Variable(register_buffer("pos_embed", table));
  }

  auto list = register_module("blocks", std::make_shared<ModuleList>("Sequential"));
  for (int64_t i = 0; i < o.depth; ++i) {
    const double rate = o.depth > 1 ? o.drop_path * double(i) / double(o.depth - 1) : 0.0;
    blocks.push_back(list->add(std::make_shared<Block>(o, i, rate, gen, dropout_gen)));
  }
  const LayerNormOptions ln{o.dim, kLayerNormEps, true, o.dtype};
  if (o.class_token) norm = register_module("norm", std::make_shared<LayerNorm>(ln));
  else fc_norm = register_module("fc_norm", std::make_shared<LayerNorm>(ln));
  if (o.num_classes > 0)
    head = register_module("head", std::make_shared<Linear>(LinearOptions{o.dim, o.num_classes, true,
                                                                          WeightInit::TruncNormal, kInitStd,
                                                                          o.dtype},
                                                            gen));
}

std::string VisionTransformer::extra_repr() const {
  const VitOptions& o = options_;
  return str_cat("img=", o.img_size, ", patch=", o.patch_size, ", dim=", o.dim, ", depth=", o.depth,
                 ", heads=", o.heads, ", classes=", o.num_classes, o.class_token ? ", cls_token" : ", avg_pool",
                 o.pos_embed == VitOptions::PosEmbed::SinCos ? ", sincos" : ", learned_pos");
}

void VisionTransformer::to(Device device) {
  Module::to(device);
  if (options_.pos_embed == VitOptions::PosEmbed::SinCos)
    for (const auto& [name, t] : named_buffers())
      if (name == "pos_embed") pos_embed_ = ag::Variable(t);
}

std::vector<std::string> VisionTransformer::no_weight_decay() const {
  std::vector<std::string> out;
  if (options_.pos_embed == VitOptions::PosEmbed::Learned) out.push_back("pos_embed");  // sin-cos: a buffer
  if (options_.class_token) out.push_back("cls_token");
  return out;
}

int64_t VisionTransformer::num_tokens() const { return patch_embed->num_patches() + (options_.class_token ? 1 : 0); }

VitOutput VisionTransformer::forward(const ag::Variable& images) const {
  const VitOptions& o = options_;
  MOH_CHECK(images.defined() && images.dim() == 4 && images.size(1) == o.in_chans,
            "VisionTransformer: expected images [B, ", o.in_chans, ", ", o.img_size, ", ", o.img_size, "], got ",
            images.describe());
  ag::Variable x = patch_embed->forward(images);  // [B, N, D]
  const int64_t batch = x.size(0);
  if (o.class_token) x = ag::cat({ag::expand(cls_token_, {batch, 1, o.dim}), x}, 1);
  x = ag::add(x, pos_embed_);
  VitOutput out;
  for (const auto& block : blocks) x = block->forward(x, out.balance_losses);
  // LayerNorm is per token, so normalising only the class token equals timm's norm-then-select.
  ag::Variable pooled = o.class_token ? norm->forward(ag::select(x, 1, 0)) : fc_norm->forward(ag::mean(x, {1}));
  out.features = pooled;
  out.logits = head ? head->forward(pooled) : pooled;
  return out;
}

}  // namespace moh
