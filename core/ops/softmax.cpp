// softmax / log_softmax and their backward: checks, dim wrapping, contiguity, output allocation.
// A 0-d input is treated as a 1-element line (softmax 1, log_softmax 0), as in PyTorch.
#include <algorithm>

#include "core/kernels/softmax.h"
#include "core/dispatch.h"
#include "core/ops.h"
#include "core/ops/checks.h"

namespace moh {
namespace {

// The contiguous tensor the kernels read: 0-d becomes [1].
Tensor as_lines(const Tensor& t) {
  Tensor c = t.contiguous();
  return c.dim() == 0 ? c.view({1}) : c;
}

Tensor softmax_forward(const char* op, const Tensor& x, int64_t dim, bool log) {
  check_float_argument(op, "input", x);
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), op);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor xl = as_lines(x);
  MOH_BACKEND(x.device(), softmax, xl, out.view(xl.shape()), d, log);
  return out;
}

Tensor softmax_grad(const char* op, const Tensor& grad_out, const Tensor& out, int64_t dim, bool log) {
  check_float_argument(op, "grad_out", grad_out);
  check_float_argument(op, "out", out);
  MOH_CHECK(grad_out.shape() == out.shape() && grad_out.dtype() == out.dtype() && grad_out.device() == out.device(),
            op, ": grad_out ", describe(grad_out), " must match the forward output ", describe(out));
  const int64_t d = wrap_dim(dim, std::max<int64_t>(out.dim(), 1), op);
  Tensor grad_in = Tensor::empty(out.shape(), out.dtype(), out.device());
  Tensor yl = as_lines(out);
  MOH_BACKEND(out.device(), softmax_backward, as_lines(grad_out), yl, grad_in.view(yl.shape()), d, log);
  return grad_in;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_forward("softmax", x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_forward("log_softmax", x, dim, true); }

Tensor softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim) {
  return softmax_grad("softmax_backward", grad_out, out, dim, false);
}
Tensor log_softmax_backward(const Tensor& grad_out, const Tensor& out, int64_t dim) {
  return softmax_grad("log_softmax_backward", grad_out, out, dim, true);
}

}  // namespace moh
