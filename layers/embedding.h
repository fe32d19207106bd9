// Embedding: a lookup table `weight` [num_embeddings, embedding_dim] (PyTorch name) indexed by int64
// token ids; initialised N(0, init_std) (GPT/LLaMA-style 0.02 by default, PyTorch itself uses 1).
// The backward is the deterministic scatter-add of ag::embedding.
#pragma once

#include <cstdint>
#include <string>

#include "autograd/variable.h"
#include "core/random.h"
#include "layers/module.h"

namespace moh {

struct EmbeddingOptions {
  int64_t num_embeddings = 0;
  int64_t embedding_dim = 0;
  double init_std = 0.02;
  DType dtype = DType::Float32;
};

class Embedding : public Module {
 public:
  Embedding(const EmbeddingOptions& options, Generator& gen);
  std::string type_name() const override { return "Embedding"; }
  std::string extra_repr() const override;
  // indices int64 [...] in [0, num_embeddings) -> [..., embedding_dim].
  ag::Variable forward(const Tensor& indices) const;

  const EmbeddingOptions& options() const { return options_; }
  const ag::Variable& weight() const { return weight_; }

 private:
  EmbeddingOptions options_;
  ag::Variable weight_;
};

}  // namespace moh
