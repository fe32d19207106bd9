// DiT's timestep and label embedders, adaLN-Zero block and final layer (see dit_blocks.h).
#include "models/dit/dit_blocks.h"

#include "autograd/autograd.h"
#include "core/factory.h"
#include "layers/module_list.h"
#include "layers/position.h"
#include "models/dit/dit.h"

namespace moh {
namespace {

constexpr double kLayerNormEps = 1e-6;  // DiT's nn.LayerNorm(elementwise_affine=False, eps=1e-6)
constexpr double kEmbedStd = 0.02;      // the label table and the timestep MLP

std::shared_ptr<Linear> make_linear(int64_t in, int64_t out, WeightInit init, DType dtype, Generator& gen) {
  return std::make_shared<Linear>(LinearOptions{in, out, true, init, kEmbedStd, dtype}, gen);
}

// DiT's nn.Sequential(SiLU, Linear(dim, chunks * dim)): registers `adaLN_modulation` and returns the linear.
std::shared_ptr<Linear> add_modulation(ModuleList& list, int64_t dim, int64_t chunks, DType dtype, Generator& gen) {
  list.add(std::make_shared<SiLU>());
  return list.add(make_linear(dim, chunks * dim, WeightInit::XavierUniform, dtype, gen));
}

}  // namespace

ag::Variable modulate(const ag::Variable& x, const ag::Variable& shift, const ag::Variable& scale) {
  return ag::add(ag::mul(x, ag::add(ag::unsqueeze(scale, 1), 1.0)), ag::unsqueeze(shift, 1));
}

TimestepEmbedder::TimestepEmbedder(int64_t dim, int64_t frequency_dim, DType dtype, Generator& gen)
    : frequency_dim_(frequency_dim), dtype_(dtype) {
  auto mlp = register_module("mlp", std::make_shared<ModuleList>("Sequential"));
  fc1 = mlp->add(make_linear(frequency_dim, dim, WeightInit::Normal, dtype, gen));
  mlp->add(std::make_shared<SiLU>());
  fc2 = mlp->add(make_linear(dim, dim, WeightInit::Normal, dtype, gen));
}

ag::Variable TimestepEmbedder::forward(const Tensor& t) const {
  MOH_CHECK(t.defined() && t.dim() == 1, "TimestepEmbedder: expected timesteps [N], got ", describe(t));
  const ag::Variable freq(timestep_embedding(t, frequency_dim_, 10000.0, SinusoidOrder::CosSin, dtype_));
  return fc2->forward(ag::silu(fc1->forward(freq)));
}

LabelEmbedder::LabelEmbedder(int64_t num_classes, int64_t dim, double dropout_prob, DType dtype, Generator& gen)
    : num_classes_(num_classes), dropout_prob_(dropout_prob) {
  embedding_table = register_module(
      "embedding_table",
      std::make_shared<Embedding>(EmbeddingOptions{num_classes + (dropout_prob > 0 ? 1 : 0), dim, kEmbedStd, dtype},
                                  gen));
}

std::string LabelEmbedder::extra_repr() const {
  return str_cat("classes=", num_classes_, ", dropout=", dropout_prob_, has_null_class() ? ", null class" : "");
}

std::vector<int64_t> LabelEmbedder::dropped_labels(const Tensor& labels, bool training, const Tensor& force_drop_ids,
                                                   Generator* gen) const {
  MOH_CHECK(labels.defined() && labels.dim() == 1 && labels.dtype() == DType::Int64,
            "LabelEmbedder: expected int64 labels [N], got ", describe(labels));
  std::vector<int64_t> y = labels.to(Device::cpu()).to_vector<int64_t>();
  const int64_t n = int64_t(y.size()), top = has_null_class() ? num_classes_ : num_classes_ - 1;
  for (int64_t i = 0; i < n; ++i)
    MOH_CHECK(y[size_t(i)] >= 0 && y[size_t(i)] <= top, "LabelEmbedder: label ", y[size_t(i)], " (sample ", i,
              ") is outside [0, ", top, "]", has_null_class() ? " (num_classes is the null class)" : "");
  if (force_drop_ids.defined()) {
    MOH_CHECK(has_null_class(), "LabelEmbedder: force_drop_ids needs a null class (class_dropout_prob > 0)");
    MOH_CHECK(force_drop_ids.dim() == 1 && force_drop_ids.size(0) == n && force_drop_ids.dtype() == DType::Int64,
              "LabelEmbedder: expected int64 force_drop_ids [", n, "], got ", describe(force_drop_ids));
    const std::vector<int64_t> drop = force_drop_ids.to(Device::cpu()).to_vector<int64_t>();
    for (int64_t i = 0; i < n; ++i)
      if (drop[size_t(i)] == 1) y[size_t(i)] = num_classes_;
  } else if (training && dropout_prob_ > 0) {
    MOH_CHECK(gen != nullptr, "LabelEmbedder: class dropout (class_dropout_prob ", dropout_prob_,
              ") in training needs a label dropout generator");
    const std::vector<double> u = uniform({n}, 0.0, 1.0, *gen, DType::Float64).to_vector<double>();
    for (int64_t i = 0; i < n; ++i)
      if (u[size_t(i)] < dropout_prob_) y[size_t(i)] = num_classes_;
  }
  return y;
}

ag::Variable LabelEmbedder::forward(const Tensor& labels, bool training, const Tensor& force_drop_ids,
                                    Generator* gen) const {
  const std::vector<int64_t> y = dropped_labels(labels, training, force_drop_ids, gen);
  return embedding_table->forward(from_vector<int64_t>(y, {int64_t(y.size())}).to(labels.device()));
}

DiTBlock::DiTBlock(const DitOptions& o, int64_t index, Generator& gen) {
  const LayerNormOptions ln{o.dim, kLayerNormEps, false, o.dtype};
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(ln));
  AttentionOptions a;
  a.dim = o.dim;
  a.num_heads = o.heads;
  a.head_dim = o.head_dim;
  a.qkv_bias = true;
  a.init = WeightInit::XavierUniform;
  a.dtype = o.dtype;
  attn = register_module("attn", make_block_attention(o.attention, index, o.depth, a, gen));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(ln));
  MlpOptions m;
  m.in_features = o.dim;
  m.hidden_features = int64_t(double(o.dim) * o.mlp_ratio);
  m.act = Activation::GeluTanh;
  m.init = WeightInit::XavierUniform;
  m.dtype = o.dtype;
  mlp = register_module("mlp", std::make_shared<Mlp>(m, gen));
  auto list = register_module("adaLN_modulation", std::make_shared<ModuleList>("Sequential"));
  modulation = add_modulation(*list, o.dim, 6, o.dtype, gen);
}

ag::Variable DiTBlock::forward(const ag::Variable& x, const ag::Variable& c,
                               std::vector<ag::Variable>& balance_losses) const {
  const std::vector<ag::Variable> m = ag::chunk(modulation->forward(ag::silu(c)), 6, 1);
  // m: shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp, each [N, dim].
  AttentionOutput a = attn->forward(modulate(norm1->forward(x), m[0], m[1]));
  if (a.balance_loss.defined()) balance_losses.push_back(a.balance_loss);
  const ag::Variable h = ag::add(x, ag::mul(ag::unsqueeze(m[2], 1), a.out));
  const ag::Variable f = mlp->forward(modulate(norm2->forward(h), m[3], m[4]));
  return ag::add(h, ag::mul(ag::unsqueeze(m[5], 1), f));
}

FinalLayer::FinalLayer(int64_t dim, int64_t patch_size, int64_t out_channels, DType dtype, Generator& gen) {
  norm_final = register_module("norm_final", std::make_shared<LayerNorm>(LayerNormOptions{dim, kLayerNormEps, false,
                                                                                          dtype}));
  linear = register_module(
      "linear", make_linear(dim, patch_size * patch_size * out_channels, WeightInit::XavierUniform, dtype, gen));
  auto list = register_module("adaLN_modulation", std::make_shared<ModuleList>("Sequential"));
  modulation = add_modulation(*list, dim, 2, dtype, gen);
}

ag::Variable FinalLayer::forward(const ag::Variable& x, const ag::Variable& c) const {
  const std::vector<ag::Variable> m = ag::chunk(modulation->forward(ag::silu(c)), 2, 1);  // shift, scale
  return linear->forward(modulate(norm_final->forward(x), m[0], m[1]));
}

}  // namespace moh
