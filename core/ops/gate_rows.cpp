// Front end of gate_rows / gate_rows_backward: validation (shapes, dtypes, devices, the index's range
// and distinctness on its device) and output allocation; see core/ops.h for the contract.
#include "core/kernels/gate_rows.h"
#include "core/dispatch.h"
#include "core/kernels/indexing.h"
#include "core/ops.h"
#include "core/ops/checks.h"

namespace moh {
namespace {

// rows [R, D], gates [P] and index [R] (int64, distinct values in [0, P)) on one device.
void check_gate_rows(const char* op, const Tensor& rows, const Tensor& gates, const Tensor& index) {
  check_float_argument(op, "rows", rows);
  MOH_CHECK(rows.dim() == 2, op, ": expected rows [R, D], got ", describe(rows));
  MOH_CHECK(gates.defined() && gates.dim() == 1 && gates.dtype() == rows.dtype() && gates.device() == rows.device(),
            op, ": expected gates [P] of ", dtype_name(rows.dtype()), " on ", rows.device(), " like the rows, got ",
            describe(gates));
  MOH_CHECK(index.defined() && index.dtype() == DType::Int64 && index.dim() == 1 && index.numel() == rows.size(0) &&
                index.device() == rows.device(),
            op, ": expected an int64 index [R] = [", rows.size(0), "] on ", rows.device(), ", got ", describe(index));
  MOH_CHECK(index.numel() <= gates.numel(), op, ": ", index.numel(), " rows cannot name distinct pairs among ",
            gates.numel(), " gates");
  const Tensor idx = index.contiguous();
  const std::string what = str_cat("the ", gates.numel(), " gates");
  MOH_BACKEND(idx.device(), check_index_range, idx, gates.numel(), op, "index", what);
  MOH_BACKEND(idx.device(), check_distinct_index, idx, gates.numel(), op, "index");
}

Shape out_shape(const Tensor& rows, const Tensor& gates, bool scatter) {
  return {scatter ? gates.numel() : rows.size(0), rows.size(1)};
}

}  // namespace

Tensor gate_rows(const Tensor& rows, const Tensor& gates, const Tensor& index, bool scatter) {
  check_gate_rows("gate_rows", rows, gates, index);
  Tensor out = Tensor::empty(out_shape(rows, gates, scatter), rows.dtype(), rows.device());
  if (out.numel() > 0)
    MOH_BACKEND(rows.device(), gate_rows, out, rows.contiguous(), gates.contiguous(), index.contiguous(), scatter);
  return out;
}

GateRowsBackward gate_rows_backward(const Tensor& grad_out, const Tensor& rows, const Tensor& gates,
                                    const Tensor& index, bool scatter) {
  const char* op = "gate_rows_backward";
  check_gate_rows(op, rows, gates, index);
  const Shape shape = out_shape(rows, gates, scatter);
  MOH_CHECK(grad_out.defined() && grad_out.shape() == shape && grad_out.dtype() == rows.dtype() &&
                grad_out.device() == rows.device(),
            op, ": expected grad_out ", shape_str(shape), " of ", dtype_name(rows.dtype()), " like the output, got ",
            grad_out.defined() ? describe(grad_out) : std::string("an undefined tensor"));
  GateRowsBackward r{Tensor::empty(rows.shape(), rows.dtype(), rows.device()),
                     Tensor::empty(gates.shape(), gates.dtype(), gates.device())};
  if (gates.numel() > 0)
    MOH_BACKEND(rows.device(), gate_rows_backward, r.grad_rows, r.grad_gates, grad_out.contiguous(), rows.contiguous(),
                gates.contiguous(), index.contiguous(), scatter);
  return r;
}

}  // namespace moh
