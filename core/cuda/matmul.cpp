// Batched GEMM on CUDA through cuBLASLt (core/cuda/blas_lt.h). Each operand is read in place when
// its matrices are row- or column-major (core/matmul_layout.h) and its batch dims step through
// memory with one uniform stride (0 for a broadcast operand), so the whole product is one strided-
// batched cuBLASLt call; an operand that is neither is copied first (its matrices made compact, or
// the whole operand materialised when the batch strides are irregular). A product whose b is shared
// by every batch and whose a batches stack into one tall matrix runs as a single [batch * M, K] GEMM.
// GEMM autocast: float32 products read bfloat16/float16 copies of a and b, accumulating in float32.
#include "core/kernels/matmul.h"

#include <cstdint>
#include <optional>

#include "core/backend_flags.h"
#include "core/cuda/blas_lt.h"
#include "core/cuda/runtime.h"
#include "core/matmul_layout.h"

namespace moh::cuda {
namespace {

// The element stride between consecutive batch matrices (batch = all dims but the last two, in
// row-major order) when one stride describes them all, else nothing.
std::optional<int64_t> uniform_batch_stride(const Tensor& t) {
  std::optional<int64_t> step;
  int64_t count = 1;  // batch matrices spanned by the dims seen so far
  for (int64_t d = t.dim() - 3; d >= 0; --d) {
    const int64_t size = t.size(d), stride = t.stride(d);
    if (size == 1) continue;
    if (!step) {
      if (stride < 0) return std::nullopt;
      step = stride;
    } else if (stride != *step * count) {
      return std::nullopt;
    }
    count *= size;
  }
  return step.value_or(0);
}

// An operand as cuBLASLt reads it, with the tensor (the input or its copy) that owns the memory.
struct Operand {
  Tensor tensor;
  GemmMatrix matrix;
};

Operand prepare(const Tensor& in) {
  Tensor t = in;
  if (!uniform_batch_stride(t)) t = t.contiguous();
  if (!matrix_layout(t).ok) t = compact_matrices(t);  // keeps a uniform batch stride uniform
  const MatrixLayout l = matrix_layout(t);
  return {t, {t.raw_data(), l.ld, *uniform_batch_stride(t), l.transposed}};
}

// `t` in `dtype`, each distinct element converted once: broadcast (stride 0) dims are converted at
// size 1 and expanded again, so a weight shared by every batch stays one matrix (and the product
// can still run as one tall GEMM).
Tensor cast_keeping_broadcasts(const Tensor& t, DType dtype) {
  Tensor distinct = t;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.stride(d) == 0 && t.size(d) > 1) distinct = distinct.narrow(d, 0, 1);
  return distinct.to(dtype).expand(t.shape());
}

// out = a @ b (+ beta * out) (+ bias per column) as one cuBLASLt call. Under GEMM autocast
// (core/backend_flags.h) a float32 product reads bfloat16/float16 copies of its operands.
void run(const Tensor& out, const Tensor& a_full, const Tensor& b_full, double beta, const void* bias) {
  if (out.numel() == 0) return;
  const bool autocast = out.dtype() == DType::Float32 && gemm_autocast() != DType::Float32;
  const Tensor a_in = autocast ? cast_keeping_broadcasts(a_full, gemm_autocast()) : a_full;
  const Tensor b_in = autocast ? cast_keeping_broadcasts(b_full, gemm_autocast()) : b_full;
  const int64_t m = out.size(-2), n = out.size(-1);
  GemmDesc g;
  g.device = out.device().index;
  g.dtype = out.dtype();
  if (autocast) g.inputs = gemm_autocast();
  g.m = m;
  g.n = n;
  g.k = a_in.size(-1);
  g.batch = out.numel() / (m * n);
  g.d = out.raw_data();
  g.ldd = n;
  g.d_batch_stride = m * n;
  g.beta = beta;
  g.bias = bias;
  Operand a, b;  // hold the operand copies, if any, until the GEMM is queued
  if (g.k > 0) {
    a = prepare(a_in);
    b = prepare(b_in);
    g.a = a.matrix;
    g.b = b.matrix;
    if (g.batch > 1 && !g.a.transposed && g.b.batch_stride == 0 && g.a.batch_stride == m * g.a.ld) {
      g.m = m * g.batch;  // the batches of a stack into one matrix, as do those of out
      g.batch = 1;
    }
  }
  gemm_lt(g);
}

}  // namespace

void matmul(const Tensor& out, const Tensor& a, const Tensor& b, bool accumulate) {
  run(out, a, b, accumulate ? 1.0 : 0.0, nullptr);
}

bool matmul_bias(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  const bool autocast = out.dtype() == DType::Float32 && gemm_autocast() != DType::Float32;
  // cuBLASLt's bias epilogue kernels may assume a 16-byte aligned bias (a view into a parameter
  // may not be): others take the generic path.
  const bool fits = out.dtype() != DType::Float64 && !autocast && a.size(-1) > 0 && bias.dim() == 1 &&
                    bias.size(0) == out.size(-1) && (bias.size(0) == 1 || bias.stride(0) == 1) &&
                    reinterpret_cast<uintptr_t>(bias.raw_data()) % 16 == 0;
  if (fits) run(out, a, b, 0.0, bias.raw_data());
  return fits;
}

}  // namespace moh::cuda
