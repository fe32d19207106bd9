// Matrix products: grad_a = g @ b^T, grad_b = a^T @ g (transposed views go to BLAS uncopied).
// A 2-D weight multiplied by a batched input gets its gradient from one GEMM over the flattened
// rows instead of a batch of GEMMs summed afterwards. Each operand is saved only when the other
// requires grad.
#include "autograd/matmul_fns.h"

#include "autograd/tape.h"
#include "core/ops.h"

namespace moh::ag {
namespace {

Tensor grad_of_b(const Tensor& a, const Tensor& g, int64_t b_dim) {
  if (b_dim == 2 && a.dim() > 2) {
    return moh::matmul(a.reshape({-1, a.size(-1)}).t(), g.reshape({-1, g.size(-1)}));
  }
  return moh::matmul(a.transpose(-2, -1), g);
}

}  // namespace

Variable matmul(const Variable& a, const Variable& b) {
  Tensor a_saved = saved_for(b, a.data()), b_saved = saved_for(a, b.data());
  return record("matmul", moh::matmul(a.data(), b.data()), {a, b},
                [a_saved, b_saved, b_dim = b.dim()](const Tensor& g, const Needs& needs) {
                  return std::vector<Tensor>{needs[0] ? moh::matmul(g, b_saved.transpose(-2, -1)) : Tensor(),
                                             needs[1] ? grad_of_b(a_saved, g, b_dim) : Tensor()};
                });
}

Variable bmm(const Variable& a, const Variable& b) {
  Tensor a_saved = saved_for(b, a.data()), b_saved = saved_for(a, b.data());
  return record("bmm", moh::bmm(a.data(), b.data()), {a, b},
                [a_saved, b_saved](const Tensor& g, const Needs& needs) {
                  return std::vector<Tensor>{needs[0] ? moh::bmm(g, b_saved.transpose(1, 2)) : Tensor(),
                                             needs[1] ? moh::bmm(a_saved.transpose(1, 2), g) : Tensor()};
                });
}

}  // namespace moh::ag
