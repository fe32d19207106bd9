// Batched GEMM on the CPU through CBLAS. Picks a BLAS layout per operand (no copy for row- or
// column-major matrices with any leading dimension), folds the batch into one tall GEMM when b is
// shared by every batch and a's batch rows are evenly spaced (x[B, T, K] @ W), and runs the batch's
// matrices in row bands on the OpenMP team (core/cpu/team_gemm.h).
#include "core/kernels/matmul.h"

#include <climits>
#include <vector>

#include "core/cpu/team_gemm.h"
#include "core/dispatch.h"
#include "core/kernels/fill.h"
#include "core/matmul_layout.h"

namespace moh::cpu {
namespace {

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
  const std::vector<int64_t> oa = fold ? std::vector<int64_t>{} : batch_offsets(a, batch),
                             ob = fold ? std::vector<int64_t>{} : batch_offsets(b, batch);
  // The folded batch is one [batch * m, n] GEMM.
  const GemmBatch matrices = fold ? GemmBatch{} : GemmBatch{batch, oa.data(), ob.data(), m * n};
  dispatch_floating(out.dtype(), "matmul", [&]<class T>() {
    team_gemm(la, lb, fold ? batch * m : m, n, k, T(1), a.data<T>(), b.data<T>(), accumulate ? T(1) : T(0),
              out.data<T>(), n, matrices, /*allow_gemv=*/true);
  });
}

}  // namespace moh::cpu
