// PatchEmbed: option and input checks, the patch gather ([B, C, gh, p, gw, p] viewed, permuted to
// [B, gh, gw, C, p, p] and copied to rows) and the projection through the fused linear node.
#include "layers/patch_embed.h"

#include "autograd/shape_fns.h"
#include "core/factory.h"

namespace moh {

PatchEmbed::Projection::Projection(const PatchEmbedOptions& o, Generator& gen)
    : in_chans(o.in_chans), embed_dim(o.embed_dim), patch_size(o.patch_size) {
  weight =
      register_parameter("weight", zeros({o.embed_dim, o.in_chans, o.patch_size, o.patch_size}, o.dtype));
  // Initialised as the [D, C*p*p] matrix it acts as (fans D and C*p*p, like DiT/MAE).
  init_weight(ag::Variable(weight.data().view({o.embed_dim, -1})), o.init, o.init_std, gen);
  if (o.bias) bias = register_parameter("bias", zeros({o.embed_dim}, o.dtype));
}

std::string PatchEmbed::Projection::extra_repr() const {
  return str_cat(in_chans, ", ", embed_dim, ", kernel=stride=", patch_size,
                 bias.defined() ? "" : ", no bias");
}

PatchEmbed::PatchEmbed(const PatchEmbedOptions& options, Generator& gen) : options_(options) {
  const PatchEmbedOptions& o = options;
  MOH_CHECK(o.img_size > 0 && o.patch_size > 0 && o.in_chans > 0 && o.embed_dim > 0,
            "PatchEmbed: img_size, patch_size, in_chans and embed_dim must be positive, got ", o.img_size,
            ", ", o.patch_size, ", ", o.in_chans, ", ", o.embed_dim);
  MOH_CHECK(o.img_size % o.patch_size == 0, "PatchEmbed: img_size ", o.img_size,
            " is not divisible by patch_size ", o.patch_size);
  proj_ = register_module("proj", std::make_shared<Projection>(o, gen));
}

std::string PatchEmbed::extra_repr() const {
  return str_cat("img=", options_.img_size, ", patch=", options_.patch_size, ", in_chans=", options_.in_chans,
                 ", dim=", options_.embed_dim);
}

ag::Variable PatchEmbed::forward(const ag::Variable& x) const {
  const int64_t p = options_.patch_size, c = options_.in_chans;
  MOH_CHECK(x.defined() && x.dim() == 4 && x.size(1) == c, layer_label(*this), ": expected images [B, ", c,
            ", H, W], got ", x.describe());
  const int64_t b = x.size(0), h = x.size(2), w = x.size(3);
  if (options_.strict_img_size) {
    MOH_CHECK(h == options_.img_size && w == options_.img_size, layer_label(*this), ": expected ",
              options_.img_size, "x", options_.img_size, " images, got ", x.describe());
  } else {
    MOH_CHECK(h % p == 0 && w % p == 0, layer_label(*this), ": image size ", h, "x", w,
              " is not divisible by the patch size ", p, " (got ", x.describe(), ")");
  }
  MOH_CHECK(x.dtype() == options_.dtype, layer_label(*this), ": input ", x.describe(),
            " does not match the layer's ", dtype_name(options_.dtype), " parameters");
  const int64_t gh = h / p, gw = w / p;
  ag::Variable patches = ag::permute(ag::reshape(x, {b, c, gh, p, gw, p}), {0, 2, 4, 1, 3, 5});
  ag::Variable rows = ag::reshape(patches, {b, gh * gw, c * p * p});
  return linear(rows, ag::view(proj_->weight, {options_.embed_dim, c * p * p}), proj_->bias);
}

}  // namespace moh
