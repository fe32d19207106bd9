// DiT: option checks, presets, construction with DiT's initialisation, the forward pass, guidance and the
// FLOP count (see dit.h).
#include "models/dit/dit.h"

#include <initializer_list>
#include <optional>
#include <utility>

#include "autograd/autograd.h"
#include "layers/init.h"
#include "layers/module_list.h"
#include "layers/position.h"

namespace moh {
namespace {

// The reference's per-block lists, written as runs (value, count).
std::vector<int64_t> runs(std::initializer_list<std::pair<int64_t, int64_t>> parts) {
  std::vector<int64_t> out;
  for (const auto& [value, count] : parts) out.insert(out.end(), size_t(count), value);
  return out;
}

// An MoH layer's gate weights (router, shared_gate, stage_gate): every attention parameter but the projections.
bool is_gate_weight(const std::string& name) { return name.rfind("qkv.", 0) != 0 && name.rfind("proj.", 0) != 0; }

}  // namespace

void DitOptions::validate() const {
  MOH_CHECK(input_size > 0 && patch_size > 0 && in_channels > 0 && dim > 0 && depth > 0 && heads > 0,
            "DiT: input_size, patch_size, in_channels, dim, depth and heads must be positive, got ", input_size,
            ", ", patch_size, ", ", in_channels, ", ", dim, ", ", depth, ", ", heads);
  MOH_CHECK(input_size % patch_size == 0, "DiT: input_size ", input_size, " is not a multiple of patch_size ",
            patch_size);
  MOH_CHECK(head_dim >= 0, "DiT: head_dim must be >= 0 (0 = dim / heads), got ", head_dim);
  attention.validate(depth, heads);
  for (int64_t b = 0; b < depth && head_dim == 0; ++b)
    MOH_CHECK(dim % attention.block_heads(b, heads) == 0, "DiT: dim ", dim, " is not a multiple of heads ",
              attention.block_heads(b, heads), attention.heads.empty() ? "" : str_cat(" (block ", b, ")"),
              "; set head_dim to decouple them");
  MOH_CHECK(dim % 4 == 0, "DiT: the 2-D sin-cos position embedding needs dim divisible by 4, got ", dim);
  MOH_CHECK(num_classes > 0, "DiT: num_classes must be positive, got ", num_classes);
  MOH_CHECK(class_dropout_prob >= 0 && class_dropout_prob < 1, "DiT: class_dropout_prob must be in [0, 1), got ",
            class_dropout_prob);
  MOH_CHECK(mlp_ratio > 0, "DiT: mlp_ratio must be positive, got ", mlp_ratio);
  MOH_CHECK(frequency_dim > 0, "DiT: frequency_dim must be positive, got ", frequency_dim);
}

DitOptions dit_preset(const std::string& name) {
  DitOptions o;
  if (name == "fmnist") {
    o.input_size = 8, o.in_channels = 4, o.patch_size = 2, o.num_classes = 10;
    o.dim = 128, o.depth = 6, o.heads = 4;
    return o;
  }
  AttentionSpec& a = o.attention;
  if (name == "DiT-S/2" || name.rfind("MoH-DiT-S/2-", 0) == 0) o.depth = 12, o.dim = 384, o.heads = 6;
  else if (name == "DiT-B/2" || name.rfind("MoH-DiT-B/2-", 0) == 0) o.depth = 12, o.dim = 768, o.heads = 12;
  else if (name == "DiT-L/2") o.depth = 24, o.dim = 1024, o.heads = 16;
  else if (name == "DiT-XL/2") o.depth = 28, o.dim = 1152, o.heads = 16;
  else o.depth = 0;
  if (name == "MoH-DiT-S/2-90") {
    a.shared_heads = runs({{3, 8}, {6, 4}}), a.routed_topk = runs({{2, 8}, {0, 4}});
  } else if (name == "MoH-DiT-S/2-75") {
    a.shared_heads = runs({{2, 2}, {3, 8}, {6, 2}}), a.routed_topk = runs({{1, 6}, {2, 4}, {0, 2}});
  } else if (name == "MoH-DiT-B/2-90") {
    a.shared_heads = runs({{6, 5}, {7, 5}, {12, 2}}), a.routed_topk = runs({{4, 10}, {0, 2}});
  } else if (name == "MoH-DiT-B/2-75") {
    a.shared_heads = runs({{4, 2}, {6, 8}, {12, 2}}), a.routed_topk = runs({{2, 2}, {3, 8}, {0, 2}});
  } else if (name == "MoH-DiT-L/2-90" || name == "MoH-DiT-L/2-75") {
    o.depth = 24, o.dim = 1024, o.heads = 16, o.head_dim = 64;
    a.heads = runs({{8, 8}, {16, 8}, {24, 8}});
    const bool ninety = name == "MoH-DiT-L/2-90";
    a.shared_heads = ninety ? runs({{8, 8}, {16, 16}}) : runs({{8, 16}, {12, 8}});
    a.routed_topk = ninety ? runs({{0, 16}, {3, 8}}) : runs({{0, 8}, {4, 16}});
  } else if (name == "MoH-DiT-XL/2-90" || name == "MoH-DiT-XL/2-75") {
    o.depth = 28, o.dim = 1152, o.heads = 16, o.head_dim = 72;
    a.heads = runs({{8, 9}, {16, 10}, {24, 9}});
    const bool ninety = name == "MoH-DiT-XL/2-90";
    a.shared_heads = ninety ? runs({{8, 9}, {16, 19}}) : runs({{8, 9}, {10, 10}, {14, 9}});
    a.routed_topk = ninety ? runs({{0, 19}, {3, 9}}) : runs({{0, 9}, {2, 19}});
  } else if (name.rfind("MoH-", 0) == 0) {
    o.depth = 0;
  }
  MOH_CHECK(o.depth > 0, "dit_preset: unknown model '", name,
            "'; expected DiT-S/2, DiT-B/2, DiT-L/2, DiT-XL/2, MoH-DiT-S/2-90, MoH-DiT-S/2-75, MoH-DiT-B/2-90, "
            "MoH-DiT-B/2-75, MoH-DiT-L/2-90, MoH-DiT-L/2-75, MoH-DiT-XL/2-90, MoH-DiT-XL/2-75 or fmnist");
  return o;
}

DiT::DiT(const DitOptions& options, Generator& gen, std::shared_ptr<Generator> label_dropout_gen)
    : options_(options), label_dropout_gen_(std::move(label_dropout_gen)) {
  options_.validate();  // before any allocation
  const DitOptions& o = options_;
  PatchEmbedOptions pe;
  pe.img_size = o.input_size;
  pe.patch_size = o.patch_size;
  pe.in_chans = o.in_channels;
  pe.embed_dim = o.dim;
  pe.init = WeightInit::XavierUniform;
  pe.dtype = o.dtype;
  x_embedder = register_module("x_embedder", std::make_shared<PatchEmbed>(pe, gen));
  t_embedder = register_module("t_embedder", std::make_shared<TimestepEmbedder>(o.dim, o.frequency_dim, o.dtype, gen));
  y_embedder = register_module(
      "y_embedder", std::make_shared<LabelEmbedder>(o.num_classes, o.dim, o.class_dropout_prob, o.dtype, gen));
  const int64_t grid = o.grid_size();
  pos_embed_ = ag::Variable(
      register_buffer("pos_embed", sincos_table_2d(o.dim, grid, grid, 0, o.dtype).reshape({1, grid * grid, o.dim})));
  auto list = register_module("blocks", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < o.depth; ++i) blocks.push_back(list->add(std::make_shared<DiTBlock>(o, i, gen)));
  final_layer = register_module("final_layer",
                                std::make_shared<FinalLayer>(o.dim, o.patch_size, o.out_channels(), o.dtype, gen));
  // MoH-DiT's _basic_init covers the gate layers too (xavier_uniform, as every Linear).
  for (const auto& block : blocks)
    for (const auto& [name, p] : block->attn->named_parameters())
      if (is_gate_weight(name)) init::xavier_uniform(p, gen);
  // adaLN-Zero: every block starts as the identity and the output at zero.
  for (const auto& block : blocks) init::zeros(block->modulation->weight()), init::zeros(block->modulation->bias());
  for (const auto& layer : {final_layer->modulation, final_layer->linear})
    init::zeros(layer->weight()), init::zeros(layer->bias());
}

std::string DiT::extra_repr() const {
  const DitOptions& o = options_;
  std::string heads = str_cat(o.heads);
  if (!o.attention.heads.empty()) {
    heads = "[";
    for (int64_t h : o.attention.heads) heads += str_cat(heads.size() > 1 ? " " : "", h);
    heads += "]";
  }
  return str_cat("input=", o.input_size, "x", o.input_size, "x", o.in_channels, ", patch=", o.patch_size,
                 ", dim=", o.dim, ", depth=", o.depth, ", heads=", heads,
                 o.head_dim > 0 ? str_cat(", head_dim=", o.head_dim) : "", ", classes=", o.num_classes,
                 o.learn_sigma ? ", learn_sigma" : "", o.attention.any_moh() ? ", moh" : "");
}

void DiT::to(Device device) {
  Module::to(device);
  for (const auto& [name, t] : named_buffers())
    if (name == "pos_embed") pos_embed_ = ag::Variable(t);
}

DitOutput DiT::forward(const ag::Variable& x, const Tensor& t, const Tensor& y, const Tensor& force_drop_ids) const {
  const DitOptions& o = options_;
  MOH_CHECK(x.defined() && x.dim() == 4 && x.size(1) == o.in_channels && x.size(2) == o.input_size &&
                x.size(3) == o.input_size,
            "DiT: expected x [N, ", o.in_channels, ", ", o.input_size, ", ", o.input_size, "], got ", x.describe());
  const int64_t n = x.size(0);
  MOH_CHECK(t.defined() && t.dim() == 1 && t.size(0) == n, "DiT: expected timesteps t [", n, "], got ",
            describe(t));
  MOH_CHECK(y.defined() && y.dim() == 1 && y.size(0) == n, "DiT: expected labels y [", n, "], got ", describe(y));
  ag::Variable h = ag::add(x_embedder->forward(x), pos_embed_);  // [N, T, D]
  const ag::Variable c = ag::add(t_embedder->forward(t),
                                 y_embedder->forward(y, is_training(), force_drop_ids, label_dropout_gen_.get()));
  DitOutput out;
  for (const auto& block : blocks) h = block->forward(h, c, out.balance_losses);
  out.out = unpatchify(final_layer->forward(h, c));
  return out;
}

ag::Variable DiT::unpatchify(const ag::Variable& patches) const {
  const int64_t c = options_.out_channels(), p = options_.patch_size, g = options_.grid_size();
  MOH_CHECK(patches.dim() == 3 && patches.size(1) == g * g && patches.size(2) == p * p * c,
            "DiT::unpatchify: expected [N, ", g * g, ", ", p * p * c, "], got ", patches.describe());
  const int64_t n = patches.size(0);
  // [N, h, w, p, q, C] -> [N, C, h, p, w, q] (DiT's einsum nhwpqc->nchpwq).
  const ag::Variable grid = ag::permute(ag::reshape(patches, {n, g, g, p, p, c}), {0, 5, 1, 3, 2, 4});
  return ag::reshape(grid, {n, c, g * p, g * p});
}

ag::Variable DiT::forward_with_cfg(const ag::Variable& x, const Tensor& t, const Tensor& y, double cfg_scale,
                                   int64_t cfg_channels) const {
  const int64_t channels = cfg_channels == 0 ? options_.in_channels : cfg_channels;
  MOH_CHECK(channels >= 1 && channels <= options_.in_channels, "DiT::forward_with_cfg: cfg_channels ", cfg_channels,
            " must be in [0, ", options_.in_channels, "] (0: all latent channels)");
  MOH_CHECK(x.defined() && x.dim() >= 1 && x.size(0) % 2 == 0,
            "DiT::forward_with_cfg: expected an even batch (conditional and unconditional halves), got ",
            x.describe());
  const int64_t half = x.size(0) / 2;
  const ag::Variable first = ag::narrow(x, 0, 0, half);
  const ag::Variable out = forward(ag::cat({first, first}, 0), t, y).out;
  const int64_t rest = out.size(1) - channels;
  const ag::Variable eps = ag::narrow(out, 1, 0, channels);
  const ag::Variable cond = ag::narrow(eps, 0, 0, half), uncond = ag::narrow(eps, 0, half, half);
  const ag::Variable guided = ag::add(uncond, ag::mul(ag::sub(cond, uncond), cfg_scale));
  const ag::Variable both = ag::cat({guided, guided}, 0);
  return rest > 0 ? ag::cat({both, ag::narrow(out, 1, channels, rest)}, 1) : both;
}

DiT::Flops DiT::forward_flops_per_sample() const {
  const DitOptions& o = options_;
  const double d = double(o.dim), t = double(o.num_tokens());
  const double hidden = double(int64_t(d * o.mlp_ratio)), p2 = double(o.patch_size * o.patch_size);
  const double per_block = t * 2 * 2 * d * hidden + 2 * d * 6 * d;  // mlp, adaLN
  Flops f;
  for (int64_t b = 0; b < o.depth; ++b) {
    const MultiHeadAttention& attn = *blocks[size_t(b)]->attn;
    const double heads = double(attn.options().num_heads), dh = double(attn.options().head_dim);
    // Per head: its query rows, scores, weighted values and slice of the output projection over all tokens.
    const double per_head = t * (2 * d * dh + 4 * t * dh + 2 * dh * d);
    const double keys_values = t * 2 * d * 2 * heads * dh;
    double gates = 0, active_heads = heads;
    if (const std::optional<MoHOptions> moh = o.attention.block(b, o.depth)) {
      for (const auto& [name, p] : attn.named_parameters())
        if (is_gate_weight(name)) gates += 2 * t * double(p.numel());
      if (moh->routed_topk > 0) active_heads = double(moh->shared_heads + moh->routed_topk);
    }
    f.dense += per_block + keys_values + gates + heads * per_head;
    f.active += per_block + keys_values + gates + active_heads * per_head;
  }
  const double embed = t * 2 * double(o.in_channels) * p2 * d + 2 * (double(o.frequency_dim) * d + d * d);
  const double final = 2 * d * 2 * d + t * 2 * d * p2 * double(o.out_channels());
  f.dense += embed + final;
  f.active += embed + final;
  return f;
}

}  // namespace moh
