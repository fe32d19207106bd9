// Embedding module: the lookup goes through ag::embedding; an op error (an index out of range, an
// index tensor on another device) is re-raised prefixed with the layer's label.
#include "layers/embedding.h"

#include "autograd/indexing_fns.h"
#include "core/factory.h"
#include "layers/init.h"
#include "layers/linear.h"

namespace moh {

Embedding::Embedding(const EmbeddingOptions& options, Generator& gen) : options_(options) {
  MOH_CHECK(options.num_embeddings > 0 && options.embedding_dim > 0 && options.init_std >= 0,
            "Embedding: num_embeddings and embedding_dim must be positive and init_std >= 0, got ",
            options.num_embeddings, ", ", options.embedding_dim, ", ", options.init_std);
  weight_ =
      register_parameter("weight", zeros({options.num_embeddings, options.embedding_dim}, options.dtype));
  if (options.init_std > 0) init::normal(weight_, gen, options.init_std);
}

std::string Embedding::extra_repr() const {
  return str_cat(options_.num_embeddings, ", ", options_.embedding_dim);
}

ag::Variable Embedding::forward(const Tensor& indices) const {
  MOH_CHECK(indices.defined() && indices.dtype() == DType::Int64, layer_label(*this),
            ": expected int64 indices, got ", describe(indices));
  try {
    return ag::embedding(weight_, indices);
  } catch (const Error& e) {
    MOH_FAIL(layer_label(*this), ": ", e.what());
  }
}

}  // namespace moh
