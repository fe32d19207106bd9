// Front end of the attention ops: validates shapes/dtypes/devices, gives every operand a unit
// last-dim stride (copying only when it lacks one) and allocates outputs in the layouts documented
// in core/ops.h ([B, T, H, *] memory, viewed as [B, H, T, *]; lse float32 for 16-bit operands).
// k, v and their gradients keep the Hkv heads they came with (grouped-query attention).
#include "core/kernels/attention.h"
#include "core/dispatch.h"
#include "core/ops.h"
#include "core/ops/checks.h"

namespace moh {
namespace {

// [B, H, T, C] tensor whose memory is laid out [B, T, H, C].
Tensor empty_bthc(int64_t b, int64_t h, int64_t t, int64_t c, DType dtype, Device device) {
  return Tensor::empty({b, t, h, c}, dtype, device).permute({0, 2, 1, 3});
}

// The saved log-sum-exp keeps float32 precision for bfloat16/float16 operands (the backward
// recomputes probabilities from it); float32/float64 operands keep their own dtype.

void check_kv(const char* op, const Tensor& k, const Tensor& v, DType dtype, Device device) {
  MOH_CHECK(k.defined() && v.defined(), op, ": k and v must be defined");
  MOH_CHECK(k.dim() == 4 && v.dim() == 4, op, ": expected k [B, Hkv, Tk, D] and v [B, Hkv, Tk, Dv], got ", describe(k),
            " and ", describe(v));
  MOH_CHECK(k.dtype() == dtype && v.dtype() == dtype, op, ": k and v must be ", dtype_name(dtype), ", got ",
            describe(k), " and ", describe(v));
  MOH_CHECK(k.device() == device && v.device() == device, op, ": all operands must be on ", device, ", got ",
            describe(k), " and ", describe(v));
  MOH_CHECK(v.size(0) == k.size(0) && v.size(1) == k.size(1) && v.size(2) == k.size(2), op,
            ": k and v disagree on [B, Hkv, Tk]: ", describe(k), " vs ", describe(v));
  MOH_CHECK(k.size(2) >= 1, op, ": need at least one key, got ", describe(k));
  MOH_CHECK(is_math_float(k), op, ": expected a ", math_float_names(k), " tensor, got ", dtype_name(dtype));
}

// Grouped-query attention: the Hkv K/V heads are shared by equal groups of the H query heads.
void check_kv_heads(const char* op, int64_t heads, const Tensor& k) {
  MOH_CHECK(heads > 0 && heads % k.size(1) == 0, op, ": the ", k.size(1), " key/value heads of k ", describe(k),
            " must divide the ", heads, " query heads (grouped-query attention shares each K/V head by H / Hkv "
            "query heads)");
}

void check_dense(const char* op, const Tensor& q, const Tensor& k, const Tensor& v) {
  MOH_CHECK(q.defined() && q.dim() == 4, op, ": expected q [B, H, Tq, D], got ", describe(q));
  check_kv(op, k, v, q.dtype(), q.device());
  MOH_CHECK(q.size(0) == k.size(0) && q.size(3) == k.size(3), op, ": q ", describe(q), " and k ", describe(k),
            " disagree on batch or head dim");
  check_kv_heads(op, q.size(1), k);
}

void check_packed(const char* op, const Tensor& q_rows, const Tensor& row_offsets, const Tensor& q_pos,
                  const Tensor& k, const Tensor& v, int64_t heads) {
  MOH_CHECK(q_rows.defined() && q_rows.dim() == 2, op, ": expected q_rows [R, D], got ", describe(q_rows));
  check_kv(op, k, v, q_rows.dtype(), q_rows.device());
  MOH_CHECK(q_rows.size(1) == k.size(3), op, ": q_rows ", describe(q_rows), " and k ", describe(k),
            " disagree on the head dim");
  check_kv_heads(op, heads, k);
  const int64_t groups = k.size(0) * heads, rows = q_rows.size(0);
  MOH_CHECK(row_offsets.defined() && row_offsets.dtype() == DType::Int64 && row_offsets.dim() == 1 &&
                row_offsets.numel() == groups + 1 && row_offsets.is_contiguous(),
            op, ": row_offsets must be a contiguous int64 [H*B + 1] = [", groups + 1, "] tensor for H = ", heads,
            " query heads and B = ", k.size(0), ", got ", describe(row_offsets));
  MOH_CHECK(q_pos.defined() && q_pos.dtype() == DType::Int64 && q_pos.dim() == 1 && q_pos.numel() == rows &&
                q_pos.is_contiguous(),
            op, ": q_pos must be a contiguous int64 [R] = [", rows, "] tensor, got ", describe(q_pos));
  MOH_CHECK(row_offsets.device() == q_rows.device() && q_pos.device() == q_rows.device(), op,
            ": row_offsets and q_pos must be on ", q_rows.device(), " like q_rows, got ", describe(row_offsets),
            " and ", describe(q_pos));
  const std::vector<int64_t> off = row_offsets.to_vector<int64_t>();  // G + 1 values (a copy from a GPU)
  MOH_CHECK(off[0] == 0 && off[groups] == rows, op, ": row_offsets must start at 0 and end at R = ", rows,
            ", got ", off[0], " and ", off[groups]);
  for (int64_t g = 0; g < groups; ++g)
    MOH_CHECK(off[g] <= off[g + 1], op, ": row_offsets decrease at group ", g, " (", off[g], " > ", off[g + 1], ")");
}

// The saved forward output and lse have the shapes this call's forward gives (out_shape, lse_shape),
// the lse the dtype it gives, and both live on q's device, like grad_out, which matches the output:
// the backends read all three directly.
void check_saved(const char* op, const Tensor& grad_out, const AttentionForward& saved, const Tensor& q,
                 const Shape& out_shape, const Shape& lse_shape) {
  MOH_CHECK(saved.out.defined() && saved.out.shape() == out_shape && saved.out.device() == q.device(), op,
            ": the saved forward output must be ", shape_str(out_shape), " on ", q.device(), ", got ",
            describe(saved.out));
  MOH_CHECK(grad_out.defined() && grad_out.shape() == out_shape && grad_out.dtype() == q.dtype() &&
                grad_out.device() == q.device(),
            op, ": grad_out ", describe(grad_out), " must match the forward output ", describe(saved.out));
  MOH_CHECK(saved.lse.defined() && saved.lse.shape() == lse_shape && saved.lse.dtype() == statistic_dtype(q.dtype()) &&
                saved.lse.device() == q.device(),
            op, ": the saved lse must be ", dtype_name(statistic_dtype(q.dtype())), " ", shape_str(lse_shape), " on ",
            q.device(), ", got ", describe(saved.lse));
}

// The query heads of a packed call: `heads`, or one per K/V head when 0.
int64_t packed_heads(const Tensor& k, int64_t heads) {
  return heads == 0 && k.defined() && k.dim() == 4 ? k.size(1) : heads;
}

}  // namespace

AttentionForward attention(const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, double scale, bool causal) {
  check_dense("attention", q_in, k_in, v_in);
  Tensor q = with_unit_last_stride(q_in), k = with_unit_last_stride(k_in), v = with_unit_last_stride(v_in);
  const int64_t b = q.size(0), h = q.size(1), tq = q.size(2);
  AttentionForward fwd{empty_bthc(b, h, tq, v.size(3), q.dtype(), q.device()),
                       Tensor::empty({b, h, tq}, statistic_dtype(q.dtype()), q.device())};
  MOH_BACKEND(q.device(), attention, fwd.out, fwd.lse, q, k, v, scale, causal);
  return fwd;
}

AttentionBackward attention_backward(const Tensor& grad_out, const Tensor& q_in, const Tensor& k_in,
                                     const Tensor& v_in, const AttentionForward& saved, double scale, bool causal) {
  check_dense("attention_backward", q_in, k_in, v_in);
  check_saved("attention_backward", grad_out, saved, q_in, {q_in.size(0), q_in.size(1), q_in.size(2), v_in.size(3)},
              {q_in.size(0), q_in.size(1), q_in.size(2)});
  Tensor q = with_unit_last_stride(q_in), k = with_unit_last_stride(k_in), v = with_unit_last_stride(v_in);
  const int64_t b = q.size(0), h = q.size(1), hkv = k.size(1);
  AttentionBackward grads{empty_bthc(b, h, q.size(2), q.size(3), q.dtype(), q.device()),
                          empty_bthc(b, hkv, k.size(2), k.size(3), q.dtype(), q.device()),
                          empty_bthc(b, hkv, v.size(2), v.size(3), q.dtype(), q.device())};
  MOH_BACKEND(q.device(), attention_backward, grads.grad_q, grads.grad_k, grads.grad_v,
              with_unit_last_stride(grad_out), q, k, v, saved.out, saved.lse, scale, causal);
  return grads;
}

AttentionForward attention_packed(const Tensor& q_rows_in, const Tensor& row_offsets, const Tensor& q_pos,
                                  const Tensor& k_in, const Tensor& v_in, double scale, bool causal,
                                  int64_t heads_in) {
  const int64_t heads = packed_heads(k_in, heads_in);
  check_packed("attention_packed", q_rows_in, row_offsets, q_pos, k_in, v_in, heads);
  Tensor q = with_unit_last_stride(q_rows_in), k = with_unit_last_stride(k_in), v = with_unit_last_stride(v_in);
  AttentionForward fwd{Tensor::empty({q.size(0), v.size(3)}, q.dtype(), q.device()),
                       Tensor::empty({q.size(0)}, statistic_dtype(q.dtype()), q.device())};
  MOH_BACKEND(q.device(), attention_packed, fwd.out, fwd.lse, q, row_offsets, q_pos, heads, k, v, scale, causal);
  return fwd;
}

AttentionBackward attention_packed_backward(const Tensor& grad_out, const Tensor& q_rows_in, const Tensor& row_offsets,
                                            const Tensor& q_pos, const Tensor& k_in, const Tensor& v_in,
                                            const AttentionForward& saved, double scale, bool causal,
                                            int64_t heads_in) {
  const int64_t heads = packed_heads(k_in, heads_in);
  check_packed("attention_packed_backward", q_rows_in, row_offsets, q_pos, k_in, v_in, heads);
  check_saved("attention_packed_backward", grad_out, saved, q_rows_in, {q_rows_in.size(0), v_in.size(3)},
              {q_rows_in.size(0)});
  Tensor q = with_unit_last_stride(q_rows_in), k = with_unit_last_stride(k_in), v = with_unit_last_stride(v_in);
  const int64_t b = k.size(0), h = k.size(1);
  AttentionBackward grads{Tensor::empty(q.shape(), q.dtype(), q.device()),
                          empty_bthc(b, h, k.size(2), k.size(3), q.dtype(), q.device()),
                          empty_bthc(b, h, v.size(2), v.size(3), q.dtype(), q.device())};
  MOH_BACKEND(q.device(), attention_packed_backward, grads.grad_q, grads.grad_k, grads.grad_v,
              with_unit_last_stride(grad_out), q, row_offsets, q_pos, heads, k, v, saved.out, saved.lse, scale,
              causal);
  return grads;
}

}  // namespace moh
