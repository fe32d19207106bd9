// softmax / log_softmax: only the output is saved (the fused backward needs nothing else).
#include "autograd/softmax_fns.h"

#include "autograd/tape.h"
#include "core/ops.h"

namespace moh::ag {

Variable softmax(const Variable& x, int64_t dim) {
  Tensor out = moh::softmax(x.data(), dim);
  return record("softmax", out, {x}, [out, dim](const Tensor& g, const Needs&) {
    return std::vector<Tensor>{moh::softmax_backward(g, out, dim)};
  });
}

Variable log_softmax(const Variable& x, int64_t dim) {
  Tensor out = moh::log_softmax(x.data(), dim);
  return record("log_softmax", out, {x}, [out, dim](const Tensor& g, const Needs&) {
    return std::vector<Tensor>{moh::log_softmax_backward(g, out, dim)};
  });
}

}  // namespace moh::ag
