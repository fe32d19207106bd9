// Front end of moh_route / moh_route_backward: validation (the head split, the logits' width, dtypes,
// devices) and output allocation; see core/ops.h for the contract.
#include "core/kernels/moh_route.h"
#include "core/dispatch.h"
#include "core/ops.h"
#include "core/ops/checks.h"

namespace moh {
namespace {

RouteShape check_route(const char* op, const Tensor& logits, int64_t heads, int64_t shared, int64_t topk,
                       double eps) {
  check_float_argument(op, "logits", logits);
  const RouteShape shape{heads, shared, topk};
  MOH_CHECK(shared >= 0 && shared < heads, op, ": shared heads ", shared, " must be in [0, heads = ", heads, ")");
  MOH_CHECK(topk >= 1 && topk <= shape.routed(), op, ": topk ", topk, " must be in [1, ", shape.routed(),
            "] (the routed heads)");
  MOH_CHECK(shape.routed() <= kMaxRoutedHeads && shared <= kMaxRoutedHeads, op, ": at most ", kMaxRoutedHeads,
            " routed and ", kMaxRoutedHeads, " shared heads, got ", shape.routed(), " and ", shared);
  MOH_CHECK(eps > 0, op, ": eps must be positive, got ", eps);
  MOH_CHECK(logits.dim() == 2 && logits.size(1) == shape.columns(), op, ": expected logits [N, ", shape.columns(),
            "] (", shape.routed(), " router", shape.shared_logits() ? str_cat(" + ", shape.shared_logits(), " shared")
                                                                     : std::string(),
            shared > 0 ? " + 2 stage" : "", " columns), got ", describe(logits));
  return shape;
}

}  // namespace

MoHRoute moh_route(const Tensor& logits_in, int64_t heads, int64_t shared, int64_t topk, double eps) {
  const RouteShape shape = check_route("moh_route", logits_in, heads, shared, topk, eps);
  const Tensor logits = logits_in.contiguous();
  const int64_t n = logits.size(0);
  const DType dt = logits.dtype();
  const Device dev = logits.device();
  MoHRoute out{Tensor::empty({n, heads}, dt, dev), Tensor::empty({n, shape.routed()}, dt, dev),
               Tensor::empty({n, shape.routed()}, dt, dev), Tensor::empty({n, topk}, DType::Int64, dev)};
  if (n > 0) MOH_BACKEND(dev, moh_route, out.gates, out.probs, out.mask, out.topk, logits, shape, eps);
  return out;
}

Tensor moh_route_backward(const Tensor& grad_gates_in, const Tensor& grad_probs_in, const Tensor& logits_in,
                          int64_t heads, int64_t shared, int64_t topk, double eps) {
  const char* op = "moh_route_backward";
  const RouteShape shape = check_route(op, logits_in, heads, shared, topk, eps);
  const Tensor logits = logits_in.contiguous();
  const int64_t n = logits.size(0);
  auto checked = [&](const Tensor& g, int64_t width, const char* name) {
    if (!g.defined()) return Tensor();
    MOH_CHECK(g.shape() == Shape({n, width}) && g.dtype() == logits.dtype() && g.device() == logits.device(), op,
              ": expected ", name, " [", n, ", ", width, "] like the logits ", describe(logits), ", got ", describe(g));
    return g.contiguous();
  };
  const Tensor grad_gates = checked(grad_gates_in, heads, "grad_gates");
  const Tensor grad_probs = checked(grad_probs_in, shape.routed(), "grad_probs");
  Tensor grad_logits = Tensor::empty(logits.shape(), logits.dtype(), logits.device());
  if (n > 0) MOH_BACKEND(logits.device(), moh_route_backward, grad_logits, grad_gates, grad_probs, logits, shape, eps);
  return grad_logits;
}

}  // namespace moh
