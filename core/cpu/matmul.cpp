// Batched GEMM on the CPU through CBLAS. Picks a BLAS layout per operand (no copy for row- or
// column-major matrices with any leading dimension), folds the batch into one tall GEMM when b is
// shared by every batch and a's batch rows are evenly spaced (x[B, T, K] @ W), else loops over
// batch matrices: in parallel across batches when each GEMM is small (OpenBLAS runs one thread
// inside an OpenMP region), serially with BLAS's own threads when each GEMM is large. A small GEMM
// that is not batched runs on the calling thread (SerialBlas).
#include "core/kernels/matmul.h"

#include <omp.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "core/cpu/blas.h"
#include "core/dispatch.h"
#include "core/kernels/fill.h"
#include "core/matmul_layout.h"

namespace moh::cpu {
namespace {

// M*N*K below which one GEMM runs on one thread: the batches of a batched product then run in
// parallel (inside an OpenMP region OpenBLAS never starts threads of its own), a single product on
// the calling thread. OpenBLAS itself splits anything above 2^18 across every thread, but waking
// and syncing the team costs more than it saves on such small products: a skinny gate projection
// ([2048, 128] @ [128, 2] and its weight gradient) ran 5x slower on 2 threads than on one.
constexpr int64_t kSerialGemm = int64_t(1) << 21;
// Batches run in parallel only when the whole batch is worth waking a thread team for.
constexpr int64_t kMinParallelWork = int64_t(1) << 16;

// Runs the BLAS calls in its scope on the calling thread when `serial`: an OpenMP OpenBLAS takes
// its thread count from omp_get_max_threads() at each call made outside a parallel region.
class SerialBlas {
 public:
  explicit SerialBlas(bool serial) : threads_(serial && !omp_in_parallel() ? omp_get_max_threads() : 1) {
    if (threads_ > 1) omp_set_num_threads(1);
  }
  ~SerialBlas() {
    if (threads_ > 1) omp_set_num_threads(threads_);
  }
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;

 private:
  int threads_;
};

// Element offset of each batch matrix of t (batch = all dims but the last two), in row-major order.
std::vector<int64_t> batch_offsets(const Tensor& t, int64_t batch) {
  const int64_t nb = t.dim() - 2;
  std::vector<int64_t> offsets(static_cast<size_t>(batch)), idx(static_cast<size_t>(nb), 0);
  int64_t off = 0;
  for (int64_t i = 0; i < batch; ++i) {
    offsets[size_t(i)] = off;
    for (int64_t d = nb - 1; d >= 0; --d) {
      off += t.strides()[size_t(d)];
      if (++idx[size_t(d)] < t.shape()[size_t(d)]) break;
      off -= idx[size_t(d)] * t.strides()[size_t(d)];
      idx[size_t(d)] = 0;
    }
  }
  return offsets;
}

// True when every batch of `a` (NoTrans) stacks into one [batch * M, K] matrix with stride ld and
// b is the same matrix for every batch.
bool foldable(const Tensor& a, const GemmOperand& la, const Tensor& b) {
  if (la.transposed) return false;
  int64_t expected = la.ld * a.size(-2);
  for (int64_t d = a.dim() - 3; d >= 0; --d) {
    if (a.shape()[size_t(d)] == 1) continue;
    if (b.strides()[size_t(d)] != 0 || a.strides()[size_t(d)] != expected) return false;
    expected *= a.shape()[size_t(d)];
  }
  return true;
}

}  // namespace

void matmul(const Tensor& out, const Tensor& a_in, const Tensor& b_in, bool accumulate) {
  const int64_t m = out.size(-2), n = out.size(-1), k = a_in.size(-1);
  if (out.numel() == 0) return;
  if (k == 0) {
    if (!accumulate) fill(out, 0.0);
    return;
  }
  Tensor a = a_in, b = b_in;
  if (!matrix_layout(a).ok) a = compact_matrices(a);
  if (!matrix_layout(b).ok) b = compact_matrices(b);
  const MatrixLayout ma = matrix_layout(a), mb = matrix_layout(b);
  const GemmOperand la{ma.transposed, ma.ld}, lb{mb.transposed, mb.ld};
  const int64_t batch = out.numel() / (m * n);
  const bool fold = foldable(a, la, b);
  const int64_t limit = INT_MAX;
  MOH_CHECK((fold ? batch * m : m) <= limit && n <= limit && k <= limit && la.ld <= limit && lb.ld <= limit,
            "matmul: a matrix of ", describe(a_in), " @ ", describe(b_in),
            " exceeds the 32-bit BLAS index range");
  dispatch_floating(out.dtype(), "matmul", [&]<class T>() {
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* pc = out.data<T>();
    const T beta = accumulate ? T(1) : T(0);
    if (fold) {
      SerialBlas serial(batch * m * n * k < kSerialGemm);
      gemm_or_gemv(la, lb, batch * m, n, k, T(1), pa, pb, beta, pc, n);
      return;
    }
    const std::vector<int64_t> oa = batch_offsets(a, batch), ob = batch_offsets(b, batch);
    const bool small = m * n * k < kSerialGemm;
    const bool parallel_batches = small && batch > 1 && batch * m * n * k >= kMinParallelWork;
    SerialBlas serial(small && !parallel_batches);
#pragma omp parallel for schedule(static) if (parallel_batches)
    for (int64_t i = 0; i < batch; ++i)
      gemm_or_gemv(la, lb, m, n, k, T(1), pa + oa[size_t(i)], pb + ob[size_t(i)], beta, pc + i * m * n, n);
  });
}

}  // namespace moh::cpu
