// CPU moh_route: tokens in parallel, each through the shared per-token math (core/math/moh_route_math.h)
// in the tensor's own type; a token's results do not depend on the thread count.
#include "core/kernels/moh_route.h"

#include "core/dispatch.h"

namespace moh::cpu {

void moh_route(const Tensor& gates, const Tensor& probs, const Tensor& mask, const Tensor& ids, const Tensor& logits,
               const RouteShape& shape, double eps) {
  const int64_t n = logits.size(0), c = shape.columns(), h = shape.heads, e = shape.routed(), k = shape.topk;
  dispatch_floating(logits.dtype(), "moh_route", [&]<class T>() {
    const T* x = logits.data<T>();
    T *g = gates.data<T>(), *p = probs.data<T>(), *m = mask.data<T>();
    int64_t* id = ids.data<int64_t>();
#pragma omp parallel for schedule(static) if (n * c > 4096)
    for (int64_t t = 0; t < n; ++t)
      route_token_forward<T>(x + t * c, shape, T(eps), g + t * h, p + t * e, m + t * e, id + t * k);
  });
}

void moh_route_backward(const Tensor& grad_logits, const Tensor& grad_gates, const Tensor& grad_probs,
                        const Tensor& logits, const RouteShape& shape, double eps) {
  const int64_t n = logits.size(0), c = shape.columns(), h = shape.heads, e = shape.routed();
  dispatch_floating(logits.dtype(), "moh_route_backward", [&]<class T>() {
    const T* x = logits.data<T>();
    const T* gg = grad_gates.defined() ? grad_gates.data<T>() : nullptr;
    const T* gp = grad_probs.defined() ? grad_probs.data<T>() : nullptr;
    T* out = grad_logits.data<T>();
#pragma omp parallel for schedule(static) if (n * c > 4096)
    for (int64_t t = 0; t < n; ++t)
      route_token_backward<T>(x + t * c, gg ? gg + t * h : nullptr, gp ? gp + t * e : nullptr, shape, T(eps),
                              out + t * c);
  });
}

}  // namespace moh::cpu
