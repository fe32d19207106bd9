// Indexing functions: each saves only the index tensor (and the input shape).
#include "autograd/indexing_fns.h"

#include "autograd/tape.h"
#include "core/factory.h"
#include "core/ops.h"

namespace moh::ag {

using Grads = std::vector<Tensor>;

Variable embedding(const Variable& weight, const Tensor& indices) {
  return record("embedding", moh::embedding(weight.data(), indices), {weight},
                [indices, rows = weight.size(0)](const Tensor& g, const Needs&) {
                  return Grads{moh::embedding_backward(g, indices, rows)};
                });
}

Variable gather(const Variable& x, int64_t dim, const Tensor& index) {
  return record("gather", moh::gather(x.data(), dim, index), {x},
                [shape = x.shape(), dim, index](const Tensor& g, const Needs&) {
                  return Grads{moh::scatter_add(zeros(shape, g.dtype(), g.device()), dim, index, g)};
                });
}

Variable index_select(const Variable& x, int64_t dim, const Tensor& index) {
  return record("index_select", moh::index_select(x.data(), dim, index), {x},
                [size = x.size(dim), dim, index](const Tensor& g, const Needs&) {
                  return Grads{moh::index_select_backward(g, dim, index, size)};
                });
}

// src may be larger than index: only its leading [index.shape] block is scattered.
Variable scatter_add(const Variable& x, int64_t dim, const Tensor& index, const Variable& src) {
  return record("scatter_add", moh::scatter_add(x.data(), dim, index, src.data()), {x, src},
                [dim, index, src_shape = src.shape()](const Tensor& g, const Needs& needs) {
                  if (!needs[1]) return Grads{g, Tensor()};
                  Tensor grad_src = moh::gather(g, dim, index);
                  if (grad_src.shape() != src_shape) {
                    Tensor padded = zeros(src_shape, g.dtype(), g.device()), block = padded;
                    for (int64_t d = 0; d < index.dim(); ++d) block = block.narrow(d, 0, index.size(d));
                    block.copy_(grad_src);
                    grad_src = padded;
                  }
                  return Grads{g, grad_src};
                });
}

Variable index_add(const Variable& x, int64_t dim, const Tensor& index, const Variable& src) {
  return record("index_add", moh::index_add(x.data(), dim, index, src.data()), {x, src},
                [dim, index](const Tensor& g, const Needs& needs) {
                  return Grads{g, needs[1] ? moh::index_select(g, dim, index) : Tensor()};
                });
}

}  // namespace moh::ag
