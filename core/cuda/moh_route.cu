// CUDA moh_route (core/kernels/moh_route.h): one thread per token through the shared lane math
// (core/math/moh_route_math.h, one lane), computed in acc_t<T> (float for the 16-bit types), on the logits'
// compute stream. No host synchronisation.
#include "core/kernels/moh_route.h"

#include "core/cuda/dispatch.cuh"
#include "core/cuda/launch.cuh"

namespace moh::cuda {
namespace {

template <class T>
__global__ void route_forward_kernel(const T* logits, RouteShape shape, acc_t<T> eps, int64_t n, T* gates, T* probs,
                                     T* mask, int64_t* ids) {
  const int64_t c = shape.columns(), e = shape.routed();
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < n; t += int64_t(gridDim.x) * blockDim.x)
    route_forward<acc_t<T>, 1>(logits + t * c, 1, shape, eps, gates + t * shape.heads, probs + t * e, mask + t * e,
                               ids + t * shape.topk);
}

template <class T>
__global__ void route_backward_kernel(const T* logits, const T* grad_gates, const T* grad_probs, RouteShape shape,
                                      acc_t<T> eps, int64_t n, T* grad_logits) {
  const int64_t c = shape.columns(), e = shape.routed();
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < n; t += int64_t(gridDim.x) * blockDim.x)
    route_backward<acc_t<T>, 1>(logits + t * c, grad_gates ? grad_gates + t * shape.heads : nullptr,
                                grad_probs ? grad_probs + t * e : nullptr, 1, shape, eps, grad_logits + t * c);
}

}  // namespace

void moh_route(const Tensor& gates, const Tensor& probs, const Tensor& mask, const Tensor& ids, const Tensor& logits,
               const RouteShape& shape, double eps) {
  const int64_t n = logits.size(0);
  DeviceGuard guard(logits.device().index);
  const cudaStream_t stream = stream_for(logits);
  dispatch_math_float(logits.dtype(), "moh_route", [&]<class T>() {
    route_forward_kernel<T><<<grid_for(n), kBlockThreads, 0, stream>>>(
        logits.data<T>(), shape, acc_t<T>(eps), n, gates.data<T>(), probs.data<T>(), mask.data<T>(),
        ids.data<int64_t>());
    MOH_CUDA_CHECK_LAUNCH("moh_route forward kernel");
  });
}

void moh_route_backward(const Tensor& grad_logits, const Tensor& grad_gates, const Tensor& grad_probs,
                        const Tensor& logits, const RouteShape& shape, double eps) {
  const int64_t n = logits.size(0);
  DeviceGuard guard(logits.device().index);
  const cudaStream_t stream = stream_for(logits);
  dispatch_math_float(logits.dtype(), "moh_route_backward", [&]<class T>() {
    route_backward_kernel<T><<<grid_for(n), kBlockThreads, 0, stream>>>(
        logits.data<T>(), grad_gates.defined() ? grad_gates.data<T>() : nullptr,
        grad_probs.defined() ? grad_probs.data<T>() : nullptr, shape, acc_t<T>(eps), n, grad_logits.data<T>());
    MOH_CUDA_CHECK_LAUNCH("moh_route backward kernel");
  });
}

}  // namespace moh::cuda
