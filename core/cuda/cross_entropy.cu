// CUDA fused cross entropy (core/kernels/cross_entropy.h, mirroring core/cpu/cross_entropy.cpp).
// logits [N, C], target [N], lse [N] and grad_logits [N, C] are contiguous. Targets are validated
// first by a kernel that finds the first out-of-range row and counts the non-ignored ones; the
// host reads those two numbers back (the one synchronisation) and raises the CPU's error
// (core/math/cross_entropy_target.h). Forward: a warp (C up to kWarpRowMax) or the block per row
// folds the online (max, sum exp) state and the logit sum in acc_t<T> and writes lse (in acc_t<T>:
// float32 for the 16-bit types, so the backward reads the forward's value) and the row loss;
// Mean/Sum then add the row losses in double, in row order, in one block. Backward: one pass over
// the logits per row, grad = cross_entropy_grad(exp(x - lse), ...); the probabilities are never
// stored. Ignored rows give loss 0 and gradient 0 and are left out of the Mean denominator (all
// ignored: NaN).
#include "core/kernels/cross_entropy.h"

#include "core/cuda/block_reduce.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/math/cross_entropy_target.h"
#include "core/math/softmax_math.h"

namespace moh::cuda {
namespace {

// flags[0] = n - (first out-of-range row), or 0 when there is none; flags[1] = non-ignored rows.
__global__ void check_targets_kernel(const int64_t* target, int64_t n, int64_t classes, int64_t ignore_index,
                                     unsigned long long* flags) {
  unsigned long long bad = 0, count = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t v = target[i];
    if (v == ignore_index) continue;
    if (v < 0 || v >= classes)
      bad = max(bad, (unsigned long long)(n - i));
    else
      ++count;
  }
  bad = warp_allreduce(bad, Max{});
  count = warp_allreduce(count, Add{});
  if (threadIdx.x % kWarp == 0) {
    if (bad) atomicMax(&flags[0], bad);
    if (count) atomicAdd(&flags[1], count);
  }
}

// Raises the backends' shared error for the first out-of-range target; returns the non-ignored count.
int64_t check_targets(const char* op, const Tensor& target, int64_t classes, int64_t ignore_index,
                      cudaStream_t stream) {
  const int64_t n = target.numel();
  if (n == 0) return 0;
  const int device = target.device().index;
  const Tensor flags = Tensor::empty({2}, DType::Int64, target.device());
  auto* pf = static_cast<unsigned long long*>(flags.raw_data());
  MOH_CUDA_CHECK(cudaMemsetAsync(pf, 0, 2 * sizeof(unsigned long long), stream));
  check_targets_kernel<<<grid_for(n), kBlockThreads, 0, stream>>>(target.data<int64_t>(), n, classes, ignore_index,
                                                                   pf);
  MOH_CUDA_CHECK_LAUNCH("check_targets_kernel");
  unsigned long long host[2];
  copy_device_to_host(host, pf, sizeof(host), device);
  if (host[0] != 0) {
    const int64_t row = n - int64_t(host[0]);
    int64_t value = 0;
    copy_device_to_host(&value, target.data<int64_t>() + row, sizeof(value), device);
    fail_target_out_of_range(op, row, value, classes, ignore_index);
  }
  return int64_t(host[1]);
}

template <class Acc>
struct RowState {
  SoftmaxState<Acc> softmax;
  Acc sum = 0;  // of the row's logits (for label smoothing)
  __device__ RowState& operator+=(const RowState& o) {
    softmax.merge(o.softmax);
    sum += o.sum;
    return *this;
  }
};

// Writes lse[row] and the row's loss: to loss_none[row] for Reduction::None, else to row_loss[row].
template <int G, class T>
__global__ void forward_kernel(const T* x, const int64_t* target, acc_t<T>* lse, T* loss_none, double* row_loss,
                               int64_t n, int64_t c, acc_t<T> ls, int64_t ignore_index) {
  using Acc = acc_t<T>;
  for_each_row<G>(n, [&](int64_t row, int lane) {
    const T* xr = x + row * c;
    RowState<Acc> s;
    for (int64_t i = lane; i < c; i += G) {
      const Acc v = load_acc(xr[i]);
      s.softmax.update(v);
      s.sum += v;
    }
    s = group_allreduce<G>(s, Add{});
    if (lane != 0) return;
    const Acc l = s.softmax.log_sum_exp();
    lse[row] = l;
    const int64_t t = target[row];
    const Acc loss = t == ignore_index ? Acc(0) : cross_entropy_row_loss(l, load_acc(xr[t]), s.sum / Acc(c), ls);
    if (loss_none)
      loss_none[row] = store_acc<T>(loss);
    else
      row_loss[row] = double(loss);
  });
}

// loss[0] = sum of row_loss / divisor, added in a fixed order by one block.
template <class T>
__global__ void total_kernel(const double* row_loss, int64_t n, double divisor, T* loss) {
  double s = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += row_loss[i];
  s = block_allreduce(s, Add{});
  if (threadIdx.x == 0) loss[0] = store_acc<T>(acc_t<T>(s / divisor));
}

// grad_loss is per row (per_row, Reduction::None) or one value divided by `divisor` (count for
// Mean, 1 for Sum).
template <int G, class T>
__global__ void backward_kernel(const T* grad_loss, const T* x, const int64_t* target, const acc_t<T>* lse, T* gx,
                                int64_t n, int64_t c, acc_t<T> ls, int64_t ignore_index, bool per_row,
                                double divisor) {
  using Acc = acc_t<T>;
  const Acc inv_c = Acc(1.0 / double(c));
  for_each_row<G>(n, [&](int64_t row, int lane) {
    T* gr = gx + row * c;
    const int64_t t = target[row];
    if (t == ignore_index) {
      for (int64_t i = lane; i < c; i += G) gr[i] = store_acc<T>(Acc(0));
      return;
    }
    const T* xr = x + row * c;
    const Acc scale = per_row ? load_acc(grad_loss[row]) : Acc(double(load_acc(grad_loss[0])) / divisor);
    const Acc l = lse[row];
    for (int64_t i = lane; i < c; i += G)
      gr[i] = store_acc<T>(cross_entropy_grad(softmax_exp(load_acc(xr[i]) - l), Acc(i == t), ls, inv_c, scale));
  });
}

}  // namespace

void cross_entropy(const Tensor& logits, const Tensor& target, double label_smoothing, int64_t ignore_index,
                   Reduction reduction, const Tensor& loss, const Tensor& lse) {
  const int64_t n = logits.size(0), c = logits.size(1);
  DeviceGuard guard(logits.device().index);
  const cudaStream_t stream = stream_for(logits);
  const int64_t count = check_targets("cross_entropy", target, c, ignore_index, stream);
  dispatch_math_float(logits.dtype(), "cross_entropy", [&]<class T>() {
    const bool none = reduction == Reduction::None;
    const Tensor row_loss = none ? Tensor() : Tensor::empty({n}, DType::Float64, logits.device());
    double* prl = none ? nullptr : row_loss.data<double>();
    T* pnone = none ? loss.data<T>() : nullptr;
    const auto launch = [&]<int G>() {
      forward_kernel<G, T><<<row_grid<G>(n), kBlockThreads, 0, stream>>>(
          logits.data<T>(), target.data<int64_t>(), lse.data<acc_t<T>>(), pnone, prl, n, c,
          acc_t<T>(label_smoothing), ignore_index);
    };
    if (n > 0) {
      if (c <= kWarpRowMax)
        launch.template operator()<kWarp>();
      else
        launch.template operator()<kBlockThreads>();
      MOH_CUDA_CHECK_LAUNCH("cross_entropy forward_kernel");
    }
    if (none) return;
    const double divisor = reduction == Reduction::Mean ? double(count) : 1.0;
    total_kernel<T><<<1, kBlockThreads, 0, stream>>>(prl, n, divisor, loss.data<T>());
    MOH_CUDA_CHECK_LAUNCH("cross_entropy total_kernel");
  });
}

void cross_entropy_backward(const Tensor& grad_loss, const Tensor& logits, const Tensor& target, const Tensor& lse,
                            double label_smoothing, int64_t ignore_index, Reduction reduction,
                            const Tensor& grad_logits) {
  const int64_t n = logits.size(0), c = logits.size(1);
  DeviceGuard guard(logits.device().index);
  const cudaStream_t stream = stream_for(logits);
  const int64_t count = check_targets("cross_entropy_backward", target, c, ignore_index, stream);
  dispatch_math_float(logits.dtype(), "cross_entropy_backward", [&]<class T>() {
    if (n == 0) return;
    const double divisor = reduction == Reduction::Mean ? double(count) : 1.0;
    const auto launch = [&]<int G>() {
      backward_kernel<G, T><<<row_grid<G>(n), kBlockThreads, 0, stream>>>(
          grad_loss.data<T>(), logits.data<T>(), target.data<int64_t>(), lse.data<acc_t<T>>(), grad_logits.data<T>(),
          n, c, acc_t<T>(label_smoothing), ignore_index, reduction == Reduction::None, divisor);
    };
    if (c <= kWarpRowMax)
      launch.template operator()<kWarp>();
    else
      launch.template operator()<kBlockThreads>();
    MOH_CUDA_CHECK_LAUNCH("cross_entropy backward_kernel");
  });
}

}  // namespace moh::cuda
