// CPU cross-entropy kernels. Rows run in parallel; each row's log-sum-exp merges per-chunk
// (max, sum exp) states in double, and per-row losses are reduced in row order in double, so the
// result does not depend on the thread count. Ignored rows give loss 0 and gradient 0 and are
// left out of the Mean denominator (all rows ignored: Mean is 0/0 = NaN, as in PyTorch).
#include "core/kernels/cross_entropy.h"

#include <algorithm>
#include <vector>

#include "core/cpu/lane_reduce.h"
#include "core/cpu/strided_loop.h"
#include "core/dispatch.h"
#include "core/math/cross_entropy_target.h"
#include "core/math/softmax_math.h"

namespace moh::cpu {
namespace {

constexpr int64_t kChunk = 256;  // logits per online-softmax step (stays in L1 between its two loops)

// Checks every target and returns how many rows are not ignored.
int64_t count_targets(const char* op, const int64_t* target, int64_t n, int64_t classes, int64_t ignore_index) {
  int64_t count = 0;
  for (int64_t r = 0; r < n; ++r) {
    if (target[r] == ignore_index) continue;
    if (target[r] < 0 || target[r] >= classes) fail_target_out_of_range(op, r, target[r], classes, ignore_index);
    ++count;
  }
  return count;
}

struct RowSums {
  double lse;
  double sum;  // sum of the row's logits (for label smoothing)
};

template <class T>
RowSums row_sums(const T* x, int64_t c) {
  SoftmaxState<double> state;
  double sum = 0;
  for (int64_t begin = 0; begin < c; begin += kChunk) {
    const int64_t end = std::min(c, begin + kChunk);
    const T* xc = x + begin;
    const T m = lane_max(xc, end - begin);
    SoftmaxState<double> chunk{double(m), 0.0};
    if (m != T(-INFINITY))  // an all -inf chunk adds nothing
      chunk.sum = lane_sum(end - begin, [&](int64_t i) { return double(softmax_exp(T(xc[i] - m))); });
    sum += lane_sum(end - begin, [&](int64_t i) { return double(xc[i]); });
    state.merge(chunk);
  }
  return {state.log_sum_exp(), sum};
}

bool parallel_rows(int64_t n, int64_t c) { return n > 1 && n * c >= 2 * kParallelGrain; }

}  // namespace

void cross_entropy(const Tensor& logits, const Tensor& target, double label_smoothing, int64_t ignore_index,
                   Reduction reduction, const Tensor& loss, const Tensor& lse) {
  const int64_t n = logits.size(0), c = logits.size(1);
  const int64_t* pt = target.data<int64_t>();
  const int64_t count = count_targets("cross_entropy", pt, n, c, ignore_index);
  dispatch_floating(logits.dtype(), "cross_entropy", [&]<class T>() {
    const T* px = logits.data<T>();
    T* plse = lse.data<T>();
    std::vector<double> row_loss(static_cast<size_t>(n));
#pragma omp parallel for schedule(static) if (parallel_rows(n, c))
    for (int64_t r = 0; r < n; ++r) {
      const T* xr = px + r * c;
      const RowSums s = row_sums(xr, c);
      plse[r] = T(s.lse);
      row_loss[size_t(r)] = pt[r] == ignore_index
                                ? 0.0
                                : cross_entropy_row_loss(s.lse, double(xr[pt[r]]), s.sum / double(c), label_smoothing);
    }
    T* pl = loss.data<T>();
    if (reduction == Reduction::None) {
      for (int64_t r = 0; r < n; ++r) pl[r] = T(row_loss[size_t(r)]);
      return;
    }
    double total = 0;
    for (double v : row_loss) total += v;
    pl[0] = T(reduction == Reduction::Mean ? total / double(count) : total);
  });
}

void cross_entropy_backward(const Tensor& grad_loss, const Tensor& logits, const Tensor& target, const Tensor& lse,
                            double label_smoothing, int64_t ignore_index, Reduction reduction,
                            const Tensor& grad_logits) {
  const int64_t n = logits.size(0), c = logits.size(1);
  const int64_t* pt = target.data<int64_t>();
  const int64_t count = count_targets("cross_entropy_backward", pt, n, c, ignore_index);
  dispatch_floating(logits.dtype(), "cross_entropy_backward", [&]<class T>() {
    const T* px = logits.data<T>();
    const T* plse = lse.data<T>();
    const T* pg = grad_loss.data<T>();
    T* pgx = grad_logits.data<T>();
    const T ls = T(label_smoothing), inv_c = T(1.0 / double(c));
    const double common = reduction == Reduction::None ? 0.0
                          : reduction == Reduction::Mean ? double(pg[0]) / double(count)
                                                          : double(pg[0]);
#pragma omp parallel for schedule(static) if (parallel_rows(n, c))
    for (int64_t r = 0; r < n; ++r) {
      T* gr = pgx + r * c;
      if (pt[r] == ignore_index) {
        std::fill(gr, gr + c, T(0));
        continue;
      }
      const T* xr = px + r * c;
      const T scale = T(reduction == Reduction::None ? double(pg[r]) : common);
      const T row_lse = plse[r];
      auto grad = [&](int64_t i, T onehot) {
        return cross_entropy_grad<T>(softmax_exp(T(xr[i] - row_lse)), onehot, ls, inv_c, scale);
      };
      for (int64_t i = 0; i < c; ++i) gr[i] = grad(i, T(0));  // branch-free, vectorised
      gr[pt[r]] = grad(pt[r], T(1));
    }
  });
}

}  // namespace moh::cpu
