// Front end of gather_linear / scatter_linear: validation (shapes, dtypes, devices, group offsets,
// index bounds) and output allocation; see core/ops.h for the contract. float32/float64 on both
// backends, and bfloat16/float16 on CUDA.
#include "core/kernels/grouped_linear.h"
#include "core/dispatch.h"
#include "core/kernels/indexing.h"
#include "core/ops.h"
#include "core/ops/checks.h"

namespace moh {
namespace {

// Checks the packed-row description and the weight; index must address the index_limit rows of
// `limit_rows`. Returns G. Offsets are read on the host (a G + 1 copy from a CUDA device); the index
// range check runs on the index's device.
int64_t check_groups(const char* op, const Tensor& rows, const Tensor& index, const Tensor& offsets,
                     const Tensor& w, int64_t din, int64_t index_limit, const char* limit_rows) {
  MOH_CHECK(w.defined() && w.dim() == 3, op, ": expected w [G, Dout, Din], got ", describe(w));
  MOH_CHECK(w.dtype() == rows.dtype() && w.device() == rows.device(), op, ": w ", describe(w),
            " must match the rows ", describe(rows));
  MOH_CHECK(w.size(2) == din, op, ": w ", describe(w), " has Din ", w.size(2), " but the rows have ", din);
  MOH_CHECK(is_math_float(rows), op, ": expected a ", math_float_names(rows), " tensor, got ",
            dtype_name(rows.dtype()));
  const int64_t groups = w.size(0), total = index.numel();
  MOH_CHECK(index.dtype() == DType::Int64 && index.dim() == 1 && index.is_contiguous(), op,
            ": index must be a contiguous 1-D int64 tensor, got ", describe(index));
  MOH_CHECK(offsets.dtype() == DType::Int64 && offsets.dim() == 1 && offsets.numel() == groups + 1 &&
                offsets.is_contiguous(),
            op, ": offsets must be a contiguous int64 [G + 1] = [", groups + 1, "] tensor, got ", describe(offsets));
  MOH_CHECK(index.device() == rows.device() && offsets.device() == rows.device(), op, ": index ", describe(index),
            " and offsets ", describe(offsets), " must be on the device of the rows ", describe(rows));
  const Tensor host_offsets = offsets.to(Device::cpu());
  const int64_t* off = host_offsets.data<int64_t>();
  MOH_CHECK(off[0] == 0 && off[groups] == total, op, ": offsets must run from 0 to R = ", total, ", got ", off[0],
            " .. ", off[groups]);
  for (int64_t g = 0; g < groups; ++g)
    MOH_CHECK(off[g] <= off[g + 1], op, ": offsets decrease at group ", g);
  MOH_BACKEND(index.device(), check_index_range, index, index_limit, op, "index",
              str_cat("the ", index_limit, " rows of ", limit_rows));
  return groups;
}

void check_matrix(const char* op, const char* name, const Tensor& t) {
  MOH_CHECK(t.defined() && t.dim() == 2, op, ": expected ", name, " to be 2-D, got ", describe(t));
}

}  // namespace

Tensor gather_linear(const Tensor& x_in, const Tensor& index, const Tensor& offsets, const Tensor& w_in,
                     const Tensor& bias_in) {
  check_matrix("gather_linear", "x [N, Din]", x_in);
  Tensor x = x_in.contiguous(), w = with_unit_last_stride(w_in);
  const int64_t groups = check_groups("gather_linear", x, index, offsets, w, x.size(1), x.size(0), "x");
  Tensor bias;
  if (bias_in.defined()) {
    MOH_CHECK(bias_in.shape() == (Shape{groups, w.size(1)}) && bias_in.dtype() == x.dtype() &&
                  bias_in.device() == x.device(),
              "gather_linear: bias must be [G, Dout] = [", groups, ", ", w.size(1), "] of ", dtype_name(x.dtype()),
              " on ", x.device(), ", got ", describe(bias_in));
    bias = bias_in;
  }
  Tensor out = Tensor::empty({index.numel(), w.size(1)}, x.dtype(), x.device());
  MOH_BACKEND(x.device(), gather_linear, out, x, index, offsets, w, bias);
  return out;
}

GroupedLinearBackward gather_linear_backward(const Tensor& grad_out, const Tensor& x_in, const Tensor& index,
                                             const Tensor& offsets, const Tensor& w_in, bool has_bias) {
  check_matrix("gather_linear_backward", "x [N, Din]", x_in);
  Tensor x = x_in.contiguous(), w = with_unit_last_stride(w_in);
  const int64_t groups = check_groups("gather_linear_backward", x, index, offsets, w, x.size(1), x.size(0), "x");
  MOH_CHECK(grad_out.shape() == (Shape{index.numel(), w.size(1)}) && grad_out.dtype() == x.dtype() &&
                grad_out.device() == x.device(),
            "gather_linear_backward: grad_out ", describe(grad_out), " must be [R, Dout] like x ", describe(x));
  GroupedLinearBackward grads{Tensor::empty(x.shape(), x.dtype(), x.device()),
                              Tensor::empty({groups, w.size(1), w.size(2)}, x.dtype(), x.device()),
                              has_bias ? Tensor::empty({groups, w.size(1)}, x.dtype(), x.device()) : Tensor()};
  MOH_BACKEND(x.device(), gather_linear_backward, grads.grad_input, grads.grad_weight, grads.grad_bias,
              grad_out.contiguous(), x, index, offsets, w);
  return grads;
}

Tensor scatter_linear(const Tensor& src_in, const Tensor& index, const Tensor& offsets, const Tensor& w_in,
                      int64_t num_rows) {
  check_matrix("scatter_linear", "src [R, Din]", src_in);
  Tensor src = src_in.contiguous(), w = with_unit_last_stride(w_in);
  check_groups("scatter_linear", src, index, offsets, w, src.size(1), num_rows, "the result");
  MOH_CHECK(src.size(0) == index.numel(), "scatter_linear: src ", describe(src), " must have one row per index entry (",
            index.numel(), ")");
  Tensor out = Tensor::empty({num_rows, w.size(1)}, src.dtype(), src.device());
  MOH_BACKEND(src.device(), scatter_linear, out, src, index, offsets, w);
  return out;
}

GroupedLinearBackward scatter_linear_backward(const Tensor& grad_out, const Tensor& src_in, const Tensor& index,
                                              const Tensor& offsets, const Tensor& w_in) {
  check_matrix("scatter_linear_backward", "src [R, Din]", src_in);
  Tensor src = src_in.contiguous(), w = with_unit_last_stride(w_in);
  check_matrix("scatter_linear_backward", "grad_out [num_rows, Dout]", grad_out);
  const int64_t groups = check_groups("scatter_linear_backward", src, index, offsets, w, src.size(1),
                                      grad_out.size(0), "grad_out");
  MOH_CHECK(grad_out.size(1) == w.size(1) && grad_out.dtype() == src.dtype() && grad_out.device() == src.device(),
            "scatter_linear_backward: grad_out ", describe(grad_out), " must have Dout = ", w.size(1),
            " columns like src ", describe(src));
  GroupedLinearBackward grads{Tensor::empty(src.shape(), src.dtype(), src.device()),
                              Tensor::empty({groups, w.size(1), w.size(2)}, src.dtype(), src.device()), Tensor()};
  MOH_BACKEND(src.device(), scatter_linear_backward, grads.grad_input, grads.grad_weight, grad_out.contiguous(), src,
              index, offsets, w);
  return grads;
}

}  // namespace moh
