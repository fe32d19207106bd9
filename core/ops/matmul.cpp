// matmul, bmm and addmm: validate operands, broadcast the batch dims and hand expanded views to the
// backend GEMM (which never copies row- or column-major matrices). addmm writes the bias into the
// result and accumulates the product onto it, except on CUDA for a [N] bias, which rides in
// cuBLASLt's bias epilogue.
#include "core/kernels/matmul.h"

#include "core/dispatch.h"
#include "core/ops.h"
#include "core/ops/checks.h"

namespace moh {
namespace {

void check_operands(const char* op, const Tensor& a, const Tensor& b) {
  MOH_CHECK(a.defined() && b.defined(), op, ": got ", describe(a), " and ", describe(b));
  MOH_CHECK(a.device() == b.device(), op, ": operands on different devices: ", describe(a), " and ",
            describe(b));
  MOH_CHECK(a.dtype() == b.dtype(), op, ": dtype mismatch: ", describe(a), " and ", describe(b));
  MOH_CHECK(is_math_float(a), op, ": expected ", math_float_names(a), " operands, got ", describe(a), " and ",
            describe(b));
  MOH_CHECK(a.dim() >= 2 && b.dim() >= 2, op,
            ": expected operands with at least 2 dims ([..., M, K] and [..., K, N]), got ", describe(a),
            " and ", describe(b), " (unsqueeze 1-D operands)");
  MOH_CHECK(a.size(-1) == b.size(-2), op, ": inner dims differ: ", describe(a), " @ ", describe(b), " (",
            a.size(-1), " vs ", b.size(-2), ")");
}

// The operands expanded to the broadcast batch shape, and the result shape.
struct Expanded {
  Tensor a, b;
  Shape out_shape;
};

Expanded expand_operands(const char* op, const Tensor& a, const Tensor& b) {
  const Shape a_batch(a.shape().begin(), a.shape().end() - 2),
      b_batch(b.shape().begin(), b.shape().end() - 2);
  const size_t nb = std::max(a_batch.size(), b_batch.size());
  Shape batch(nb);
  for (size_t i = 0; i < nb; ++i) {
    int64_t da = i + a_batch.size() >= nb ? a_batch[i + a_batch.size() - nb] : 1;
    int64_t db = i + b_batch.size() >= nb ? b_batch[i + b_batch.size() - nb] : 1;
    MOH_CHECK(da == db || da == 1 || db == 1, op, ": batch dims of ", describe(a), " and ", describe(b),
              " do not broadcast");
    batch[i] = da == 1 ? db : da;
  }
  Shape a_shape = batch, b_shape = batch, out_shape = batch;
  a_shape.insert(a_shape.end(), {a.size(-2), a.size(-1)});
  b_shape.insert(b_shape.end(), {b.size(-2), b.size(-1)});
  out_shape.insert(out_shape.end(), {a.size(-2), b.size(-1)});
  return {a.expand(a_shape), b.expand(b_shape), out_shape};
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_operands("matmul", a, b);
  const Expanded e = expand_operands("matmul", a, b);
  Tensor out = Tensor::empty(e.out_shape, a.dtype(), a.device());
  MOH_BACKEND(a.device(), matmul, out, e.a, e.b);
  return out;
}

Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b) {
  check_operands("addmm", a, b);
  MOH_CHECK(bias.defined() && bias.dtype() == a.dtype() && bias.device() == a.device(), "addmm: bias ",
            describe(bias), " does not match the operands ", describe(a), " and ", describe(b),
            " (expected the same dtype and device)");
  const Expanded e = expand_operands("addmm", a, b);
  MOH_CHECK(broadcast_shapes(bias.shape(), e.out_shape, "addmm") == e.out_shape, "addmm: bias ",
            describe(bias), " does not broadcast to the result shape ", shape_str(e.out_shape));
  Tensor out = Tensor::empty(e.out_shape, a.dtype(), a.device());
#if defined(MOH_WITH_CUDA)
  if (out.device().is_cuda() && cuda::matmul_bias(out, e.a, e.b, bias)) return out;  // bias in the GEMM epilogue
#endif
  out.copy_(bias.expand(e.out_shape));
  MOH_BACKEND(a.device(), matmul, out, e.a, e.b, true);
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  check_operands("bmm", a, b);
  MOH_CHECK(a.dim() == 3 && b.dim() == 3 && a.size(0) == b.size(0),
            "bmm: expected [B, M, K] @ [B, K, N], got ", describe(a), " @ ", describe(b));
  return matmul(a, b);
}

}  // namespace moh
