// The DiT building blocks (facebookresearch/DiT models.py, with its module and parameter names, so a DiT
// state dict loads by name): the timestep embedder (sinusoidal, frequency dim 256, then
// `mlp` = Linear-SiLU-Linear), the label embedder (`embedding_table` with a null class row when class
// dropout is on; dropout and forced drops for classifier-free guidance), the adaLN-Zero block and the final
// layer. `adaLN_modulation` is DiT's nn.Sequential(SiLU, Linear), so its linear is `adaLN_modulation.1`.
// The zero initialisation of the modulation and output layers (adaLN-Zero) is done by the model (dit.h),
// as DiT's initialize_weights does; the blocks initialise only what they own by DiT's rule (xavier Linear,
// zero biases, normal(0.02) label table and timestep MLP).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "core/random.h"
#include "layers/attention_spec.h"
#include "layers/embedding.h"
#include "layers/linear.h"
#include "layers/mlp.h"
#include "layers/module.h"
#include "layers/norm.h"

namespace moh {

struct DitOptions;

// x * (1 + scale) + shift, with x [N, T, D] and shift, scale [N, D] broadcast over the tokens.
ag::Variable modulate(const ag::Variable& x, const ag::Variable& shift, const ag::Variable& scale);

// nn.SiLU's slot in DiT's nn.Sequential containers: no parameters, it only keeps the children's indices
// (and so the state-dict names) as DiT's.
class SiLU : public Module {
 public:
  std::string type_name() const override { return "SiLU"; }
};

class TimestepEmbedder : public Module {
 public:
  TimestepEmbedder(int64_t dim, int64_t frequency_dim, DType dtype, Generator& gen);
  std::string type_name() const override { return "TimestepEmbedder"; }
  // t [N] (any real dtype, may be fractional) -> [N, dim].
  ag::Variable forward(const Tensor& t) const;

  std::shared_ptr<Linear> fc1, fc2;  // `mlp.0`, `mlp.2`

 private:
  int64_t frequency_dim_;
  DType dtype_;
};

class LabelEmbedder : public Module {
 public:
  // num_classes + 1 rows when dropout_prob > 0: row num_classes is the null ("unconditional") class.
  LabelEmbedder(int64_t num_classes, int64_t dim, double dropout_prob, DType dtype, Generator& gen);
  std::string type_name() const override { return "LabelEmbedder"; }
  std::string extra_repr() const override;
  // labels int64 [N] in [0, num_classes] (num_classes, the null class, only with a null row). Labels are
  // replaced by the null class where force_drop_ids (int64 [N], 1 = drop) says so, or else, in training
  // with dropout_prob > 0, each with probability dropout_prob drawn from `gen` (then required).
  ag::Variable forward(const Tensor& labels, bool training, const Tensor& force_drop_ids, Generator* gen) const;
  // The labels the table is indexed with (after the drops above), on the host.
  std::vector<int64_t> dropped_labels(const Tensor& labels, bool training, const Tensor& force_drop_ids,
                                      Generator* gen) const;

  int64_t num_classes() const { return num_classes_; }
  bool has_null_class() const { return dropout_prob_ > 0; }
  std::shared_ptr<Embedding> embedding_table;

 private:
  int64_t num_classes_;
  double dropout_prob_;
};

// x + gate_msa * attn(modulate(norm1(x), shift_msa, scale_msa)), then the same for the Mlp, with the six
// modulation vectors from adaLN_modulation(c).
class DiTBlock : public Module {
 public:
  DiTBlock(const DitOptions& options, int64_t index, Generator& gen);
  std::string type_name() const override { return "DiTBlock"; }
  // x [N, T, dim], c [N, dim] -> [N, T, dim]; a defined balance loss of the attention is appended.
  ag::Variable forward(const ag::Variable& x, const ag::Variable& c, std::vector<ag::Variable>& balance_losses) const;

  std::shared_ptr<LayerNorm> norm1, norm2;      // no affine, eps 1e-6
  std::shared_ptr<MultiHeadAttention> attn;     // an MoHAttention for MoH blocks
  std::shared_ptr<Mlp> mlp;                     // GELU (tanh), hidden dim * mlp_ratio
  std::shared_ptr<Linear> modulation;           // `adaLN_modulation.1`: dim -> 6 dim
};

// linear(modulate(norm_final(x), shift, scale)) with shift, scale from adaLN_modulation(c).
class FinalLayer : public Module {
 public:
  FinalLayer(int64_t dim, int64_t patch_size, int64_t out_channels, DType dtype, Generator& gen);
  std::string type_name() const override { return "FinalLayer"; }
  // x [N, T, dim], c [N, dim] -> [N, T, p * p * out_channels].
  ag::Variable forward(const ag::Variable& x, const ag::Variable& c) const;

  std::shared_ptr<LayerNorm> norm_final;
  std::shared_ptr<Linear> linear;
  std::shared_ptr<Linear> modulation;  // `adaLN_modulation.1`: dim -> 2 dim
};

}  // namespace moh
