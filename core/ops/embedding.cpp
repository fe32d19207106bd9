// embedding and embedding_backward: shape/dtype checks, index range check (naming the first bad
// position), then the backend lookup or grouped scatter-add.
#include "core/kernels/embedding.h"

#include "core/dispatch.h"
#include "core/kernels/indexing.h"
#include "core/ops.h"
#include "core/ops/checks.h"

namespace moh {

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  MOH_CHECK(weight.defined() && indices.defined(), "embedding: got weight ", describe(weight),
            " and indices ", describe(indices));
  MOH_CHECK(weight.device() == indices.device(), "embedding: weight ", describe(weight), " and indices ",
            describe(indices), " are on different devices");
  MOH_CHECK(weight.dim() == 2, "embedding: expected a 2-D weight [V, D], got ", describe(weight));
  MOH_CHECK(indices.dtype() == DType::Int64, "embedding: expected int64 indices, got ", describe(indices));
  MOH_BACKEND(weight.device(), check_index_range, indices, weight.size(0), "embedding", "indices",
              str_cat("the ", weight.size(0), " rows of weight ", describe(weight)));
  Shape shape = indices.shape();
  shape.push_back(weight.size(1));
  Tensor out = Tensor::empty(shape, weight.dtype(), weight.device());
  MOH_BACKEND(weight.device(), embedding, out, weight, indices.contiguous());
  return out;
}

Tensor embedding_backward(const Tensor& grad_out, const Tensor& indices, int64_t num_rows) {
  MOH_CHECK(grad_out.defined() && indices.defined(), "embedding_backward: got grad_out ", describe(grad_out),
            " and indices ", describe(indices));
  MOH_CHECK(grad_out.device() == indices.device(), "embedding_backward: grad_out ", describe(grad_out),
            " and indices ", describe(indices), " are on different devices");
  MOH_CHECK(indices.dtype() == DType::Int64, "embedding_backward: expected int64 indices, got ",
            describe(indices));
  MOH_CHECK(is_math_float(grad_out), "embedding_backward: expected a ", math_float_names(grad_out), " grad_out, got ",
            describe(grad_out));
  MOH_CHECK(num_rows >= 0, "embedding_backward: num_rows must be >= 0, got ", num_rows);
  Shape want = indices.shape();
  MOH_CHECK(grad_out.dim() == indices.dim() + 1, "embedding_backward: grad_out ", describe(grad_out),
            " must have shape indices.shape + [D] for indices ", describe(indices));
  want.push_back(grad_out.size(-1));
  MOH_CHECK(grad_out.shape() == want, "embedding_backward: grad_out ", describe(grad_out),
            " must have shape ", shape_str(want), " for indices ", describe(indices));
  MOH_BACKEND(grad_out.device(), check_index_range, indices, num_rows, "embedding_backward", "indices",
              str_cat(num_rows, " rows"));
  const int64_t dim = grad_out.size(-1);
  Tensor grad_weight = Tensor::empty({num_rows, dim}, grad_out.dtype(), grad_out.device());
  MOH_BACKEND(grad_out.device(), embedding_backward, grad_weight, grad_out.reshape({indices.numel(), dim}),
              indices.contiguous());
  return grad_weight;
}

}  // namespace moh
