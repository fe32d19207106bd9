// CPU moh_route: blocks of kLanes tokens in parallel, each through the shared lane math
// (core/math/moh_route_math.h: the loops over a block's tokens vectorise) in the tensor's own type; a token's
// results do not depend on the thread count.
#include "core/kernels/moh_route.h"

#include <algorithm>

#include "core/dispatch.h"

namespace moh::cpu {
namespace {

constexpr int kLanes = 8;  // tokens per block: one AVX2 register of float32

}  // namespace

void moh_route(const Tensor& gates, const Tensor& probs, const Tensor& mask, const Tensor& ids, const Tensor& logits,
               const RouteShape& shape, double eps) {
  const int64_t n = logits.size(0), c = shape.columns(), h = shape.heads, e = shape.routed(), k = shape.topk;
  const int64_t blocks = (n + kLanes - 1) / kLanes;
  dispatch_floating(logits.dtype(), "moh_route", [&]<class T>() {
    const T* x = logits.data<T>();
    T *g = gates.data<T>(), *p = probs.data<T>(), *m = mask.data<T>();
    int64_t* id = ids.data<int64_t>();
#pragma omp parallel for schedule(static) if (n * c > 4096)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t t = b * kLanes;
      route_forward<T, kLanes>(x + t * c, int(std::min<int64_t>(kLanes, n - t)), shape, T(eps), g + t * h,
                               p + t * e, m + t * e, id + t * k);
    }
  });
}

void moh_route_backward(const Tensor& grad_logits, const Tensor& grad_gates, const Tensor& grad_probs,
                        const Tensor& logits, const RouteShape& shape, double eps) {
  const int64_t n = logits.size(0), c = shape.columns(), h = shape.heads, e = shape.routed();
  const int64_t blocks = (n + kLanes - 1) / kLanes;
  dispatch_floating(logits.dtype(), "moh_route_backward", [&]<class T>() {
    const T* x = logits.data<T>();
    const T* gg = grad_gates.defined() ? grad_gates.data<T>() : nullptr;
    const T* gp = grad_probs.defined() ? grad_probs.data<T>() : nullptr;
    T* out = grad_logits.data<T>();
#pragma omp parallel for schedule(static) if (n * c > 4096)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t t = b * kLanes;
      route_backward<T, kLanes>(x + t * c, gg ? gg + t * h : nullptr, gp ? gp + t * e : nullptr,
                                int(std::min<int64_t>(kLanes, n - t)), shape, T(eps), out + t * c);
    }
  });
}

}  // namespace moh::cpu
